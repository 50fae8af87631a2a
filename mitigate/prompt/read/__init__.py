"""Reading a judge template as published: notation, sandbox, clues, layout, and its fields with evidence
(the caller's hints included). Public names are imported from :mod:`mitigate.prompt`."""
