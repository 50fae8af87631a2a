"""Reading a judge template as published: notation, sandbox, clues, layout, fields with evidence, hints.
Public names are imported from :mod:`mitigate.prompt`."""
