"""The command line's options, each declared once, in the groups commands compose.

Each command's options are one frozen dataclass (beside the command, e.g.
:class:`mitigate.cli._judge.JudgeOptions`) made of the groups here and its own options; its fields are the
command-line options (:mod:`~mitigate.cli.options._declare`: how an option is declared once and reworded by a
command). The groups: the task (:mod:`~mitigate.cli.options._task`), the judge's LM and its server
(:mod:`~mitigate.cli.options._backend`), the template and how the judge answers
(:mod:`~mitigate.cli.options._prompt`), the run (:mod:`~mitigate.cli.options._run`), the results
(:mod:`~mitigate.cli.options._results`); help texts that list what is registered are filled when printed
(``registered_names``).

Modules whose dataclass fields Typer reads do not use ``from __future__ import annotations``: the annotations
must be real objects. Importing this package loads neither pydantic nor the registry.
"""
