"""``python -m mitigate.testing``: run the stub server in the foreground."""

from mitigate.testing._stub_server import main

main()
