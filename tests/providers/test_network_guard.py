import socket

import pytest


def test_guard_refuses_non_local_connection() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(RuntimeError, match="network"):
            s.connect(("93.184.216.34", 80))
    finally:
        s.close()
