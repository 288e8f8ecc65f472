"""URLs as the Python package prints them: a presigned S3 URL's or an Azure SAS URL's query string
is a credential (``X-Amz-Signature=...``, ``sig=...``), as is a user and password before the host,
so neither is printed. The same rule as Stoke's Java side (``io.stoke.loader.internal.Urls``)."""

import re

__all__ = ["redact"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)([^?#]*)(.*)$", re.DOTALL)


def redact(url: str) -> str:
    """``url`` as a message prints it: scheme, host, port and path kept; a user and password
    dropped, a query string or fragment replaced by ``?REDACTED``.

    Args:
        url: a URL, or a local path (returned as it is: a ``?`` in a file name is no query).

    Returns:
        The URL without its secrets.
    """
    m = _URL.match(url) if isinstance(url, str) else None
    if m is None:
        return url
    scheme, authority, path, rest = m.groups()
    host = authority.rpartition("@")[2]
    return scheme + host + path + ("?REDACTED" if rest else "")
