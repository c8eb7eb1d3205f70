"""Graph passes, each a named function `Graph -> Graph` run in a visible pipeline."""
