"""Files before any parsing: walking directories, telling what a file is, reading zips safely.

Takes paths and bytes.  Gives the files under a directory that stay inside it (``walk``),
what a file is by its bytes and name (``filekind``: zip archive, legacy archive, pickle,
Git LFS pointer, code), and a bounded zip reader that refuses hostile archives before
reading an entry (``zipread``).  Knows nothing of TorchScript's archive layout.
"""
