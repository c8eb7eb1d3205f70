"""``python -m tensorforge.autotune._worker FD PLUGINS``: a measurement worker process."""

import sys

from tensorforge.autotune.executor import worker_main

if __name__ == "__main__":
    worker_main(sys.argv[1:])
