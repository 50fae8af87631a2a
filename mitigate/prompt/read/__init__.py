"""Reading a judge template as published: its notation (``_syntax``), its sandboxed rendering (``_sandbox``),
the clues in its words (``_clues``), where the judged item stands (``_layout``), its fields with the
evidence for each (``_fields``, ``_evidence``) and the caller's overrides (``_hints``). Public names are
imported from :mod:`mitigate.prompt`.
"""
