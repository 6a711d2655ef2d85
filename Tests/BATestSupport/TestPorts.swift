import Foundation

/// Ports below the kernel's ephemeral range (`ip_local_port_range`), which no server that binds
/// port 0 can be given, in two parts that never meet:
///
/// - ``belowEphemeralRange()``: for servers that stop and come back where they were (nginx in an
///   outage test) and for ports probed closed that a server takes later. Such a test holds its
///   port without listening on it for a while.
/// - ``toCheckFreed()``: for a test that stops its server and then checks that nothing listens on
///   the port. With port 0, a test running beside it took the port it had just freed; with one
///   range for both uses, an outage test's nginx came back on the port such a test had borrowed
///   while nginx was down, and the check connected to nginx (a red CI run).
package enum TestPorts {
    /// The first port of the ephemeral range (32768 when it cannot be read).
    package static let ephemeralLow: Int = {
        // Read to the end: /proc files have no size, and String(contentsOfFile:) reads nothing of them.
        let data = FileHandle(forReadingAtPath: "/proc/sys/net/ipv4/ip_local_port_range")?.readDataToEndOfFile()
        let text = String(decoding: data ?? Data(), as: UTF8.self)
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32768
    }()

    private static var ceiling: Int { min(ephemeralLow, 32768) }
    private static var floor: Int { max(1024, ceiling - 12000) }
    /// Where the ports of ``toCheckFreed()`` begin: the top quarter.
    private static var split: Int { ceiling - (ceiling - floor) / 4 }

    /// A random port in the lower three quarters of the 12,000 below the ephemeral range: try it,
    /// and another if it is taken.
    package static func belowEphemeralRange() -> Int { Int.random(in: floor..<split) }

    /// A random port in the top quarter of the 12,000 below the ephemeral range, which no test
    /// holds to come back to: try it, and another if it is taken.
    package static func toCheckFreed() -> Int { Int.random(in: split..<ceiling) }
}
