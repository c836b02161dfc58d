"""A small torch.distributed.Store-like store over a directory, for the tether.init(store=...) tests without torch.
Keys are files (written to a temporary name, then renamed: a reader sees a whole value or none). get() waits for the
key like torch's stores, bounded by `timeout` seconds. Every call is logged in .log as (op, key) so a test can check
which path a job used."""
import os
import time
import urllib.parse


class FileStore:
    def __init__(self, path, timeout=60.0):
        self.path = path
        self.timeout = timeout
        self.log = []
        os.makedirs(path, exist_ok=True)

    def _file(self, key):
        return os.path.join(self.path, urllib.parse.quote(key, safe=""))

    def set(self, key, value):
        if isinstance(value, str):
            value = value.encode()
        tmp = "%s.tmp-%d" % (self._file(key), os.getpid())
        with open(tmp, "wb") as f:
            f.write(bytes(value))
        os.replace(tmp, self._file(key))
        self.log.append(("set", key))

    def get(self, key):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with open(self._file(key), "rb") as f:
                    value = f.read()
                self.log.append(("get", key))
                return value
            except FileNotFoundError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("FileStore %s: key %r not set within %.0f s" % (self.path, key, self.timeout))
            time.sleep(0.01)

    def check(self, keys):
        return all(os.path.exists(self._file(k)) for k in keys)
