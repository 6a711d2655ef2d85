#!/usr/bin/env python3
"""Reads a local pack file from the disk alone, as a launcher may before basd runs.

    read_offline.py GROUP_ID BUNDLE_ID PACK_ID PATH_IN_PACK [STATE_DIR]
"""
import hashlib
import sys

from background_assets import PackFileError, PackFiles


def main():
    group, app, pack, path = sys.argv[1:5]
    files = PackFiles.in_state_dir(group, app, sys.argv[5] if len(sys.argv) > 5 else None)
    print("local packs %s" % sorted(files.local_packs().items()))
    try:
        data = files.read(pack, path)
    except PackFileError as error:
        print("error errno %d: %s" % (error.errno, error), file=sys.stderr)
        return 1
    print("read %s %d %s" % (path, len(data), hashlib.sha256(data).hexdigest()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
