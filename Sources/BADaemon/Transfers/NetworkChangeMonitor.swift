import Foundation

/// Watches the kernel's routing netlink for network changes (links, addresses and routes coming
/// and going) and calls `changed` on the executor, at most once per 200 ms burst: transfers
/// waiting to retry after the network was unreachable then try again at once, instead of at the
/// end of their backoff.
///
/// Runs on a thread of its own (a ``DescriptorWatcher``), blocked in `poll`. When the socket
/// cannot be opened (a sandbox without netlink), basd logs it and relies on the backoff alone.
enum NetworkChangeMonitor {
    /// `struct sockaddr_nl` (linux/netlink.h, which Swift's Glibc module does not include).
    private struct NetlinkAddress {
        var family = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32
    }

    // linux/rtnetlink.h
    private static let linkGroup: UInt32 = 0x1  // RTMGRP_LINK
    private static let ipv4AddressGroup: UInt32 = 0x10  // RTMGRP_IPV4_IFADDR
    private static let ipv4RouteGroup: UInt32 = 0x40  // RTMGRP_IPV4_ROUTE
    private static let ipv6AddressGroup: UInt32 = 0x100  // RTMGRP_IPV6_IFADDR
    private static let ipv6RouteGroup: UInt32 = 0x400  // RTMGRP_IPV6_ROUTE

    /// Opens the netlink socket and starts the thread.
    /// - Throws: A message naming the call that failed.
    static func start(
        executor: ServiceExecutor, changed: @escaping @Sendable () -> Void
    ) throws
        -> DescriptorWatcher
    {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else {
            throw DescriptorWatcher.WatchError("socket(AF_NETLINK): \(String(cString: strerror(errno)))")
        }
        var address = NetlinkAddress(
            groups: Self.linkGroup | Self.ipv4AddressGroup | Self.ipv4RouteGroup | Self.ipv6AddressGroup
                | Self.ipv6RouteGroup)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<NetlinkAddress>.size))
            }
        }
        guard bound == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw DescriptorWatcher.WatchError("bind(AF_NETLINK): \(message)")
        }
        // A burst of messages (a link coming up brings its addresses and routes) is one change:
        // told 200 ms after the first. The content does not matter, only that something changed.
        return try DescriptorWatcher(
            fd: fd, name: "basd-netlink", settle: .milliseconds(200), executor: executor,
            drain: { fd in
                var buffer = [UInt8](repeating: 0, count: 16 << 10)
                while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
            }, changed: changed)
    }
}
