import Foundation

/// Ports for tests that must check a port is free after their server stops: a port below the
/// kernel's ephemeral range (`ip_local_port_range`), which no server of a parallel test (they all
/// bind port 0) can be given in between. With port 0, a test running beside one took the port it
/// had just freed, and its "nothing listens there" check connected to the other test's server.
package enum TestPorts {
    /// The first port of the ephemeral range (32768 when it cannot be read).
    package static let ephemeralLow: Int = {
        // Read to the end: /proc files have no size, and String(contentsOfFile:) reads nothing of them.
        let data = FileHandle(forReadingAtPath: "/proc/sys/net/ipv4/ip_local_port_range")?.readDataToEndOfFile()
        let text = String(decoding: data ?? Data(), as: UTF8.self)
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32768
    }()

    /// A random port in the 12,000 below the ephemeral range: try it, and another if it is taken.
    package static func belowEphemeralRange() -> Int {
        let ceiling = min(ephemeralLow, 32768)
        return Int.random(in: max(1024, ceiling - 12000)..<ceiling)
    }
}
