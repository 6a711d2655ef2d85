#!/usr/bin/env python3
"""A TCP proxy on loopback that holds data a fixed time each way: a link with that much latency.

This kernel has no netem, so the pack benchmark puts this in front of nginx for every tool it
compares (Benchmarks/packs-device.sh, PACKS_RTT_MS). Each chunk read from one side is written to
the other DELAY_MS after it was read, in order; bandwidth is not limited (the proxy buffers what
is in flight, as a long fat link does). A new connection's first bytes to the server also wait one
round trip more, for the TCP handshake a real link would cost (the kernel completes the client's
handshake with the proxy at once). It stops by itself when its parent exits, or after MAX_SECONDS.

Usage: delay-proxy.py LISTEN_PORT TARGET_PORT DELAY_MS [MAX_SECONDS=3600]
Prints "ready" on stdout once it listens.
"""

import asyncio
import os
import sys
import time

READ_SIZE = 256 * 1024


async def pipe(reader, writer, delay, extra_first):
    """Copies reader to writer, each chunk written `delay` seconds after it was read."""
    queue = asyncio.Queue()

    async def feed():
        first = True
        while True:
            data = await reader.read(READ_SIZE)
            hold = delay + (extra_first if first else 0.0)
            first = False
            await queue.put((time.monotonic() + hold, data))
            if not data:
                return

    async def drain():
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(feed(), drain())
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def main():
    listen_port, target_port, delay_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    max_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 3600.0
    delay = delay_ms / 1000.0
    parent = os.getppid()

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay, 2 * delay),
            pipe(server_reader, client_writer, delay, 0.0),
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, reuse_address=True)
    print("ready", flush=True)
    deadline = time.monotonic() + max_seconds
    async with server:
        while time.monotonic() < deadline and os.getppid() == parent:
            await asyncio.sleep(0.5)


if __name__ == "__main__":
    asyncio.run(main())
