"""tether.Error: every failed call, with the C library's status code and message."""

# Status codes of include/tether/tether.h (tether_status_t).
_STATUS_NAMES = {
    0: "TETHER_SUCCESS", 1: "TETHER_ERR_INVALID_ARG", 2: "TETHER_ERR_INVALID_PE", 3: "TETHER_ERR_NOT_SYMMETRIC",
    4: "TETHER_ERR_OVERFLOW", 5: "TETHER_ERR_NO_MEMORY", 6: "TETHER_ERR_MISMATCH", 7: "TETHER_ERR_TIMEOUT",
    8: "TETHER_ERR_PEER_LOST", 9: "TETHER_ERR_BOOTSTRAP", 10: "TETHER_ERR_SYSTEM", 11: "TETHER_ERR_CUDA",
    12: "TETHER_ERR_UNSUPPORTED", 13: "TETHER_ERR_UNREACHABLE", 14: "TETHER_ERR_INTERNAL",
    15: "TETHER_ERR_TRUNCATED",
}
INVALID_ARG = 1
NOT_SYMMETRIC = 3
UNSUPPORTED = 12


def status_name(status):
    """'TETHER_ERR_INVALID_PE' for 2, ..."""
    return _STATUS_NAMES.get(status, "TETHER_STATUS_%d" % status)


class Error(RuntimeError):
    """A failed tether call. .status is the tether_status_t code, .status_name its name, .message the text of
    tether_last_error() (it names the call and the values)."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = status_name(self.status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))

    def __reduce__(self):
        return (Error, (self.status, self.message))
