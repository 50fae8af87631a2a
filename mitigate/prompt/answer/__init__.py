"""The answer a judge prompt asks for: the format value (``_format``), its constraints for backends
(``_constraint``) and its inference from a template's text (``_infer``). Public names are imported from
:mod:`mitigate.prompt`.
"""
