"""A Python client of basd, the Background Assets service, for apps not written in Swift.

It speaks basd's socket protocol (docs/protocol.md) with the standard library alone: list an
app's asset packs, make one local with progress, remove it, check for updates, follow its events,
and read its files (without basd too). docs/packs-from-any-language.md walks through it.

    from background_assets import AppClient

    with AppClient("com.example.game") as client:
        client.ensure("levels", progress=lambda done, total: print(done, "of", total))
        data = client.read("levels", "maps/1.map")
"""

from .client import AppClient, BasdError, DownloadEstimate, PackEvent, PROTOCOL_VERSION, default_socket_path
from .files import PackFiles, PackFileError

__all__ = [
    "AppClient",
    "BasdError",
    "DownloadEstimate",
    "PackEvent",
    "PackFiles",
    "PackFileError",
    "PROTOCOL_VERSION",
    "default_socket_path",
]
__version__ = "0.1.0"
