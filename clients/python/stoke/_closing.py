"""One base for what this package closes once: a ring attached, a loader and its producer."""

from typing import Any


class Closeable:
    """A resource closed once: :meth:`close` closes it the first time and does nothing after,
    ``with`` closes it at the block's end, and collection closes what was left open.

    A subclass says whether it is :attr:`closed` and does the closing in :meth:`_close`.
    """

    @property
    def closed(self) -> bool:
        """Whether it is closed (or was never opened)."""
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Closes it; idempotent."""
        if not self.closed:
            self._close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> bool:
        self.close()
        return False

    def __del__(self) -> None:
        # At collection, which may come while the interpreter ends: nothing may escape from here.
        try:
            self.close()
        except Exception:
            pass
