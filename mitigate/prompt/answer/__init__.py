"""The answer a judge prompt asks for: the format value and its backend constraint (``_format``), its
inference from a template (``_infer``). Public names are imported from :mod:`mitigate.prompt`."""
