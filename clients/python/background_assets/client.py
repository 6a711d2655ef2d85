"""basd's socket protocol, version 1 (docs/protocol.md), for an app's asset packs."""

import collections
import json
import os
import select
import socket
import struct
import time

from .files import PackFiles

PROTOCOL_VERSION = 1
# basd refuses a frame above 1 MiB (docs/protocol.md, "Framing"); so does this client.
MAX_FRAME = 1 << 20
# A packEvent kind that ends a download.
ENDING_KINDS = ("finished", "failed", "removed")


def default_socket_path():
    """basd's socket as basd and `ba` find it: `$BA_SOCKET`, else
    `$XDG_RUNTIME_DIR/background-assets/basd.sock`, else `/tmp/background-assets-UID/basd.sock`."""
    if os.environ.get("BA_SOCKET"):
        return os.environ["BA_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "background-assets", "basd.sock")
    return "/tmp/background-assets-%d/basd.sock" % os.getuid()


class BasdError(Exception):
    """basd's error reply (docs/protocol.md, "Errors"): `code` says what it is, never the message.

    55: basd cannot be reached, or does not know the app; 56: the exchange broke; 1006: an unknown
    pack; 1100-1110: a refused manifest or index, a parked job (the `code` of a failed download
    too); `message` says what to fix."""

    def __init__(self, code, message):
        super().__init__("basd error %d: %s" % (code, message))
        self.code = code
        self.message = message


DownloadEstimate = collections.namedtuple(
    "DownloadEstimate", ["fetch_bytes", "write_bytes", "waits_for_metered_network"])
DownloadEstimate.__doc__ = """What making a pack local would fetch and write, and whether it waits for
consent on a metered network (``AppClient.estimate``)."""


class PackEvent:
    """One `packEvent`: `kind` (`began`, `progress`, `paused`, `finished`, `failed`, `removed`,
    `obsolete`), `pack`, `version`, the byte counts, `waiting_for` and `message` when given;
    `fields` has every field as basd sent it (newer basds add some)."""

    def __init__(self, fields):
        self.fields = fields
        self.kind = fields.get("kind")
        self.pack = fields.get("assetPackID")
        self.version = fields.get("version")
        self.bytes_present = fields.get("bytesPresent")
        self.bytes_total = fields.get("bytesTotal")
        self.waiting_for = fields.get("waitingFor")
        self.message = fields.get("message")
        self.error_code = fields.get("errorCode")

    def __repr__(self):
        return "PackEvent(%s %s %s/%s)" % (self.kind, self.pack, self.bytes_present, self.bytes_total)


class AppClient:
    """One app's connection to basd, as `AssetPackManager` has it.

    `bundle_identifier` must be registered with basd (`ba install`, or a package's registration).
    Connecting as the app marks it launched, as Apple's first launch does (the pre-launch limits
    end). A launcher that only wants to show status before the app runs connects with
    `probe=True`: the app is not marked launched, and the connection may only list packs and
    follow their events (basd refuses the rest with 56; a basd without probes refuses the hello
    with 1001 and changes nothing).
    """

    def __init__(self, bundle_identifier, socket_path=None, timeout=30.0, probe=False):
        self.bundle_identifier = bundle_identifier
        self.probe = bool(probe)
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout
        self._socket = None
        self._buffer = b""
        self._next_id = 1
        self._events = collections.deque()
        self._following = False
        self.welcome = None

    # Connection

    def connect(self):
        """Connects and says hello; raises BasdError 55 when basd cannot be reached."""
        if self._socket is not None:
            return self
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except OSError as error:
            raise BasdError(55, "cannot reach basd at %s: %s (is it running? `ba status`)" % (self.socket_path, error))
        self._socket = sock
        role = "probe" if self.probe else "app"
        client = {"role": role, "bundleIdentifier": self.bundle_identifier, "pid": os.getpid()}
        result = self._request({"type": "hello", "protocolVersion": PROTOCOL_VERSION, "client": client})
        self.welcome = result.get("welcome", {})
        return self

    def close(self):
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc):
        self.close()

    def fileno(self):
        """The socket, for an event loop to poll: readable means ``poll_events`` has something."""
        return self.connect()._socket.fileno()

    # Packs

    def packs(self):
        """The app's packs: a list of PackInfo dicts (docs/protocol.md): `assetPackID`, `policy`,
        `localVersion`, `serverVersion`, `status`, `downloadSize`, `path` when local,
        `fetchBytes` and `writeBytes` (``estimate``), …"""
        return self._packs({"action": "list"})

    def estimate(self, pack_id):
        """What making `pack_id` local now would take, before it starts (docs/packs.md, "Size
        before fetching"): a DownloadEstimate of `fetch_bytes` (compressed bytes from the
        network), `write_bytes` (bytes written to disk; None until basd has read the version's
        index) and `waits_for_metered_network` (it waits for a network that is not metered: it
        is not essential, not asked for, and over basd's `meteredPackConsentBytes`, 200 MB by
        default; ``ensure`` is consent). None when the app has no such pack; the byte counts are
        None from a basd that does not report them."""
        info = self.pack(pack_id)
        if info is None:
            return None
        return DownloadEstimate(
            info.get("fetchBytes"), info.get("writeBytes"), info.get("waitingFor") == "meteredNetwork")

    def pack(self, pack_id):
        """One pack's PackInfo, or None when the app has no such pack."""
        return next((info for info in self.packs() if info.get("assetPackID") == pack_id), None)

    def ensure(self, pack_id, require_latest=False, progress=None, timeout=None):
        """Makes `pack_id` local and waits until it is (with `require_latest`, its newest version).

        `progress(bytes_present, bytes_total)` is called as bytes arrive. Returns the pack's
        PackInfo. Raises BasdError: 1006 for an unknown pack, basd's pack codes for a refused
        manifest, the failed download's code (or 0) when it failed, 110 on `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self.follow()  # before asking: no event of this download can be missed
        infos = self._packs({"action": "ensure", "pack": pack_id, "requireLatest": bool(require_latest)})
        info = next((i for i in infos if i.get("assetPackID") == pack_id), None)
        if info is None:
            raise BasdError(1006, "the app has no asset pack %s" % pack_id)
        while True:
            if self._satisfied(info, require_latest):
                return info
            if "downloading" not in (info.get("status") or "").split(","):
                raise BasdError(info.get("errorCode") or 0, info.get("error") or "basd did not start downloading it")
            event = self._wait_for_event(pack_id, deadline)
            if event.kind == "progress" and progress and event.bytes_total:
                progress(event.bytes_present or 0, event.bytes_total)
            elif event.kind == "failed":
                raise BasdError(event.error_code or 0, event.message or "the download failed")
            elif event.kind in ENDING_KINDS:
                info = self.pack(pack_id) or {}

    def remove(self, pack_id):
        """Removes the pack's local files (it stays listed, to download again)."""
        self._packs({"action": "remove", "pack": pack_id})

    def cancel(self, pack_id):
        """Stops the pack's download (what is verified is kept for next time)."""
        self._packs({"action": "cancel", "pack": pack_id})

    def check_for_updates(self):
        """Reads the download manifest again; returns (updating pack IDs, removed pack IDs)."""
        before = {i["assetPackID"]: i for i in self.packs()}
        after = {i["assetPackID"]: i for i in self._packs({"action": "check"})}
        updating = {p for p, i in after.items() if "downloading" in (i.get("status") or "")}
        removed = {p for p in before if p not in after or "obsolete" in (after[p].get("status") or "")}
        return updating, removed

    def follow(self):
        """Asks basd for the app's pack events (once per connection)."""
        if not self._following:
            self._packs({"action": "follow"})
            self._following = True

    def poll_events(self):
        """The pack events received so far, without waiting (after ``follow``)."""
        self._receive(block=False)
        events = list(self._events)
        self._events.clear()
        return events

    def events(self):
        """Every pack event from now on, waiting for each (after ``follow``)."""
        self.follow()
        while True:
            while self._events:
                yield self._events.popleft()
            self._receive(block=True)

    def files(self):
        """The app's local pack files, read from the disk (``PackFiles``), where basd said its
        app group container is."""
        container = self.connect().welcome.get("appGroupContainer")
        if not container:
            raise BasdError(55, "basd has no app group container for this app: packs need BAAppGroupID")
        return PackFiles(container, self.bundle_identifier)

    def read(self, pack_id, path):
        """The bytes of `path` in the local version of `pack_id`."""
        return self.files().read(pack_id, path)

    # Internals

    @staticmethod
    def _satisfied(info, require_latest):
        local = info.get("localVersion")
        if local is None:
            return False
        server = info.get("serverVersion")
        return not require_latest or server is None or local >= server

    def _packs(self, command):
        return self._request({"type": "packs", "packs": command}).get("packs", {}).get("packs", [])

    def _request(self, message):
        if self._socket is None and message.get("type") != "hello":
            self.connect()
        request_id = self._next_id
        self._next_id += 1
        message = dict(message, id=request_id)
        body = json.dumps(message, separators=(",", ":")).encode()
        if len(body) > MAX_FRAME:
            raise BasdError(1000, "a request of %d bytes is over basd's frame limit" % len(body))
        try:
            self._socket.sendall(struct.pack(">I", len(body)) + body)
        except OSError as error:
            self.close()
            raise BasdError(56, "the connection to basd broke: %s" % error)
        while True:
            frame = self._read_frame()
            if frame.get("type") == "response" and frame.get("id") == request_id:
                result = frame.get("result") or {}
                if result.get("type") == "error":
                    raise BasdError(result.get("code", 56), result.get("message", ""))
                return result
            self._keep(frame)

    def _keep(self, frame):
        if frame.get("type") == "packEvent" and isinstance(frame.get("packEvent"), dict):
            self._events.append(PackEvent(frame["packEvent"]))

    def _wait_for_event(self, pack_id, deadline):
        while True:
            for index, event in enumerate(self._events):
                if event.pack == pack_id:
                    del self._events[index]
                    return event
            if deadline is not None and time.monotonic() >= deadline:
                raise BasdError(110, "%s is not local yet (timed out)" % pack_id)
            self._receive(block=True, deadline=deadline)

    def _has_frame(self):
        if len(self._buffer) < 4:
            return False
        (length,) = struct.unpack(">I", self._buffer[:4])
        return len(self._buffer) >= 4 + length

    def _receive(self, block, deadline=None):
        """Reads what basd sent, keeping the events: when `block`, waits for one frame (until
        `deadline`), then takes whatever else is already there."""
        wait = block
        while True:
            if not self._has_frame():
                timeout = 0
                if wait:
                    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                readable, _, _ = select.select([self._socket], [], [], timeout)
                if not readable:
                    return
            self._keep(self._read_frame())
            wait = False

    def _read_frame(self):
        while True:
            if len(self._buffer) >= 4:
                (length,) = struct.unpack(">I", self._buffer[:4])
                if length == 0 or length > MAX_FRAME:
                    self.close()
                    raise BasdError(1000, "basd sent a frame of %d bytes" % length)
                if len(self._buffer) >= 4 + length:
                    body = self._buffer[4 : 4 + length]
                    self._buffer = self._buffer[4 + length :]
                    try:
                        frame = json.loads(body)
                    except ValueError as error:
                        self.close()
                        raise BasdError(1001, "basd sent a frame that is not JSON: %s" % error)
                    if not isinstance(frame, dict):
                        raise BasdError(1001, "basd sent a frame that is not an object")
                    return frame
            try:
                chunk = self._socket.recv(1 << 16)
            except socket.timeout:
                raise BasdError(56, "basd did not answer within %s s" % self.timeout)
            except OSError as error:
                self.close()
                raise BasdError(56, "the connection to basd broke: %s" % error)
            if not chunk:
                self.close()
                raise BasdError(56, "basd closed the connection")
            self._buffer += chunk
