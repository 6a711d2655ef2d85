#!/usr/bin/env python3
"""Makes an asset pack local with a progress bar, then prints a file's size and SHA-256.

    ensure_pack.py BUNDLE_ID PACK_ID PATH_IN_PACK     (BA_SOCKET: basd's socket, if not the default)
"""
import hashlib
import sys

from background_assets import AppClient, BasdError


def main():
    app, pack, path = sys.argv[1:4]
    try:
        with AppClient(app) as client:
            def progress(done, total):
                filled = done * 30 // total
                print("progress %d/%d [%s%s]" % (done, total, "#" * filled, "." * (30 - filled)), flush=True)

            info = client.ensure(pack, progress=progress, timeout=120)
            print("local %s version %s" % (pack, info.get("localVersion")), flush=True)
            data = client.read(pack, path)
    except BasdError as error:
        print("error %d: %s" % (error.code, error.message), file=sys.stderr)
        return 1
    print("read %s %d %s" % (path, len(data), hashlib.sha256(data).hexdigest()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
