"""The ``mitigate`` command line: one module per command, loaded when that command runs.

:mod:`~mitigate.cli._app` holds the command group, how a command is declared (``command``) and its one-line
error handling (:mod:`~mitigate.cli._errors`: the ``error:`` line and the exit codes);
:mod:`~mitigate.cli._commands` names every command and the module that defines it, so the group imports a
command's module only when that command is asked for (``mitigate --help`` imports none).
:mod:`~mitigate.cli.options` holds the options, each declared once in the groups commands compose (the task,
the judge's backend, the template, the run, the results); each command's module holds its options class, made
of those groups. :mod:`~mitigate.cli._build` is the one ``build_judge`` and the one item order of judge,
compare, search, probe and diff, :mod:`~mitigate.cli._files` the checked files and folders,
:mod:`~mitigate.cli._config` the config files every command reads (``-f``) and writes (``--save-config``).
Every command takes ``--plugin MODULE``. Options are checked before data is loaded, data and prompts before
the first LM call. ``--debug`` (or ``MITIGATE_DEBUG=1``) shows the traceback of an error instead of its line.

A command module imports at its top what its command always needs, and inside the command what only some of
its options need (the strategies for ``--pipeline``, plots, writers of ``--out``);
tests/cli/test_cli_imports.py pins what ``mitigate --help``, each command's ``--help`` and ``judge`` load.
Help texts that list registered names (:func:`~mitigate.cli.options.registered_names`) are filled when that
help is printed.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.cli._app import app, main
    from mitigate.cli._errors import EXIT_FAILED, EXIT_REFUSED

__getattr__, __dir__, __all__ = lazy_exports(__name__)
