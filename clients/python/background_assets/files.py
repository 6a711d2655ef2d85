"""An app's local asset-pack files, read from the disk: no basd needed (docs/packs.md, "Where
the files are").

`CONTAINER/AppAssetPacks/APP/ID` is a link basd keeps to the pack's current version (a read-only
folder that never changes once linked): a reader that opens that folder once sees one whole
version. Below it, no link is followed (another process of the user could plant one), and a
path may not leave the folder.
"""

import errno
import os
import stat

# Bounds of a path inside a pack (basd's PackLimits): what basd would never have installed.
MAX_PATH_BYTES = 1024
MAX_COMPONENTS = 64


class PackFileError(Exception):
    """A pack file that cannot be read: `errno` says why (ENOENT: not local, or no such file;
    ELOOP: a link where a file should be; EINVAL: a path that is not a pack path)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.errno = code


def default_state_dir():
    """basd's default state folder: `$XDG_DATA_HOME/background-assets`, else
    `~/.local/share/background-assets`."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "background-assets")


class PackFiles:
    """The local packs of app `bundle_identifier` in app group container `container`.

    Without basd, give the container yourself: ``PackFiles.in_state_dir(group, app)`` is
    `STATE_DIR/groups/GROUP` (basd's default state folder unless `state_dir` says otherwise).
    """

    def __init__(self, container, bundle_identifier):
        self.folder = os.path.join(container, "AppAssetPacks", bundle_identifier)

    @classmethod
    def in_state_dir(cls, group, bundle_identifier, state_dir=None):
        return cls(os.path.join(state_dir or default_state_dir(), "groups", group), bundle_identifier)

    def local_packs(self):
        """{pack ID: local version} of the packs that are local now."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return {}
        packs = {}
        for name in names:
            if name.startswith("."):
                continue
            version = self.local_version(name)
            if version is not None:
                packs[name] = version
        return packs

    def local_version(self, pack_id):
        """The local version of `pack_id` (the number its link names), or None."""
        try:
            target = os.readlink(os.path.join(self.folder, _component(pack_id)))
        except (OSError, PackFileError):
            return None
        last = target.rstrip("/").rsplit("/", 1)[-1]
        return int(last) if last.isdigit() else None

    def is_local(self, pack_id):
        return self.local_version(pack_id) is not None

    def open(self, pack_id, path):
        """A file object (binary, read-only) for `path` in the local version of `pack_id`."""
        components = _components(path)
        try:
            # The pack's link is followed (basd made it); nothing below it is.
            directory = os.open(os.path.join(self.folder, _component(pack_id)), os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            raise PackFileError(error.errno, "asset pack %s is not local (%s)" % (pack_id, error.strerror))
        try:
            for index, name in enumerate(components):
                last = index == len(components) - 1
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (0 if last else os.O_DIRECTORY)
                try:
                    opened = os.open(name, flags, dir_fd=directory)
                except OSError as error:
                    code = errno.ELOOP if error.errno in (errno.ELOOP, errno.ENOTDIR) else error.errno
                    raise PackFileError(code, "%s in asset pack %s: %s" % (path, pack_id, os.strerror(code)))
                os.close(directory)
                directory = opened
            if not stat.S_ISREG(os.fstat(directory).st_mode):
                raise PackFileError(errno.EISDIR, "%s in asset pack %s is not a file" % (path, pack_id))
            handle = os.fdopen(directory, "rb")
            directory = -1
            return handle
        finally:
            if directory >= 0:
                os.close(directory)

    def read(self, pack_id, path):
        """The bytes of `path` in the local version of `pack_id`."""
        with self.open(pack_id, path) as handle:
            return handle.read()


def _component(name):
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise PackFileError(errno.EINVAL, "%r is not a pack ID" % name)
    return name


def _components(path):
    if isinstance(path, bytes):
        path = path.decode()
    if len(path.encode()) > MAX_PATH_BYTES:
        raise PackFileError(errno.EINVAL, "a pack path is at most %d bytes" % MAX_PATH_BYTES)
    components = [c for c in path.split("/") if c]
    if not components or len(components) > MAX_COMPONENTS or any(c in (".", "..") or "\0" in c for c in components):
        raise PackFileError(errno.EINVAL, "%r is not a path inside a pack" % path)
    return components
