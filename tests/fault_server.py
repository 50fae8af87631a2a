"""The misbehaving loopback server of the bounds and hostile-server tests (it lives in
:mod:`mitigate.testing`, so the
benchmarks use the same one)."""

from mitigate.testing._fault_server import (
    BODIES,
    ECHO_MODES,
    KEY,
    FaultServer,
    chat_answer,
    http_reply,
    message_answer,
)

__all__ = ["BODIES", "ECHO_MODES", "KEY", "FaultServer", "chat_answer", "http_reply", "message_answer"]
