"""The sizes the copier reads and writes in."""

MiB = 2**20
READ_CHUNK = 8 * MiB
"""Bytes per read of a stream (the Hub's, an object's)."""
DEFAULT_PART_SIZE = 64 * MiB
"""Bytes per uploaded part (``--part-size``)."""
