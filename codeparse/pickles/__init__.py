"""Pickles, read without unpickling: what globals a pickle names and the plain data it holds.

Takes the bytes of a pickle or of an archive's pickle entries.  Gives the globals a pickle
would import, classified by the allowlist ``grammars/pickle-globals.toml`` (``picklescan``),
plain data loaded only when every opcode is plain (``safepickle``), and the findings of a
model file or archive scanned this way (``scan``).  Nothing here ever calls ``pickle.load``.
"""
