"""Thread tags and memory scopes: which threads share a buffer, and so which loops bound
inference must relax for it.

GPU threads form a hierarchy: a grid of blocks (`blockIdx.x|y|z`, rank 0), each of threads
(`threadIdx.x|y|z`, rank 1). Memory scopes have ranks too: `global` (0) is seen by every
thread, `shared` (1) by the threads of one block, `warp` (2) by the lanes of a warp, `local`
(3) by one thread. A buffer of scope rank r is filled cooperatively by all threads of rank
>= r, so bound inference relaxes (takes the whole range of) every loop bound to such a thread
above the attach point: a `shared` tile attached under 16 x 16 `threadIdx` loops holds what
all 256 threads read, not what one thread reads (TVM's `NeedRelax`)."""

from __future__ import annotations

from dataclasses import dataclass

GRID_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
BLOCK_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
LAUNCH_TAGS = GRID_TAGS + BLOCK_TAGS

SCOPE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3}


@dataclass(frozen=True)
class ThreadTag:
    """A parsed thread tag: `rank` 0 for blocks, 1 for threads (-1 for virtual threads);
    `dim` 0, 1, 2 for x, y, z."""

    tag: str
    rank: int
    dim: int

    @staticmethod
    def parse(tag: str) -> ThreadTag:
        if tag in GRID_TAGS:
            return ThreadTag(tag, 0, GRID_TAGS.index(tag))
        if tag in BLOCK_TAGS:
            return ThreadTag(tag, 1, BLOCK_TAGS.index(tag))
        return ThreadTag(tag, -1, -1)

    @property
    def is_launch(self) -> bool:
        return self.rank >= 0


def is_launch_tag(tag: str) -> bool:
    """blockIdx.* or threadIdx.* (not a virtual thread)."""
    return tag in LAUNCH_TAGS


def scope_rank(scope: str) -> int:
    """Rank of a memory scope; accelerator scopes count as private (`local`)."""
    return SCOPE_RANK.get(scope, SCOPE_RANK["local"])


def relaxes(scope: str, tag: str) -> bool:
    """Whether a buffer of `scope` is shared by the threads of `tag`, so that a loop bound to
    `tag` above the buffer's attach point is relaxed to its whole range."""
    t = ThreadTag.parse(tag)
    if not t.is_launch:
        return False
    r = scope_rank(scope)
    if scope == "warp":
        return t.tag == "threadIdx.x"
    return r <= t.rank


def default_scope(tags_above: list[str]) -> str:
    """The scope of an attached stage without `set_scope`: `local` under a `threadIdx` loop,
    `shared` under a `blockIdx` loop only, else `global` (TVM's default storage rank)."""
    ranks = [ThreadTag.parse(t).rank for t in tags_above if is_launch_tag(t)]
    if not ranks:
        return "global"
    return "local" if max(ranks) >= 1 else "shared"
