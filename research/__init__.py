"""The research yard: measurements behind the design notes (docs/research/), one module each,
run from a clone as ``python -m research.NAME`` (not in the wheel). What they share, and the
product functions they call instead of copying them, is in :mod:`research.common`."""
