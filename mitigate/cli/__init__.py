"""The ``mitigate`` command line: one module per command, loaded when that command runs.

:mod:`~mitigate.cli._app` holds the command group, how a command is declared and its one-line error handling
(:mod:`~mitigate.cli._errors`); :mod:`~mitigate.cli._commands` names every command's module, imported only
when that command is asked for. :mod:`~mitigate.cli.options` holds the options, each declared once in the
groups the commands' options classes compose; :mod:`~mitigate.cli._build` the one ``build_judge`` and item
order, :mod:`~mitigate.cli._files` the checked files and folders, :mod:`~mitigate.cli._config` the config
files (``-f``, ``--save-config``). Options are checked before data is loaded, data and prompts before the
first LM call. A command module imports inside the command what only some options need
(tests/cli/test_cli_imports.py pins what ``--help`` and ``judge`` load).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.cli._app import app, main
    from mitigate.cli._errors import EXIT_FAILED, EXIT_REFUSED

__getattr__, __dir__, __all__ = lazy_exports(__name__)
