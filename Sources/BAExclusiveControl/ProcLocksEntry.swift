/// One line of `/proc/locks`: a lock the kernel holds (or a process waits for) on one inode.
///
/// The kernel prints (fs/locks.c, `lock_get_status`):
///
/// ```
/// 1: FLOCK  ADVISORY  WRITE 12875 fe:00:16222522 0 EOF
/// 1: -> FLOCK  ADVISORY  WRITE 12990 fe:00:16222522 0 EOF
/// ```
///
/// the lock's number, `->` for a process blocked waiting for it, the kind (`FLOCK`, `POSIX`,
/// `OFDLCK`, `LEASE`, …), the mode, the pid, then `MAJOR:MINOR:INODE` with the device's major and
/// minor number in hex and the inode in decimal.
package struct ProcLocksEntry: Sendable, Hashable {
    /// `FLOCK`, `POSIX`, `OFDLCK`, `LEASE`, `DELEG`, …
    package var kind: String
    /// A process blocked waiting for the lock (`->`), not a holder.
    package var isWaiter: Bool
    /// `READ` (shared), `WRITE` (exclusive) or `UNLCK`.
    package var mode: String
    /// The pid that took the lock, in the reader's pid namespace; -1 for OFD locks, and 0 or
    /// negative when the kernel cannot name it.
    package var pid: Int32
    /// The locked file's device.
    package var major: UInt32
    package var minor: UInt32
    /// The locked file's inode number.
    package var inode: UInt64

    /// Parses one line; nil for a line that is not a lock record.
    package init?(line: Substring) {
        var fields = line.split(separator: " ", omittingEmptySubsequences: true)[...]
        guard let number = fields.popFirst(), number.hasSuffix(":") else { return nil }
        isWaiter = fields.first == "->"
        if isWaiter { fields = fields.dropFirst() }
        // kind, then its qualifier (ADVISORY, MANDATORY, ACTIVE, BREAKING, …), mode, pid, device:inode.
        guard fields.count >= 5 else { return nil }
        let values = Array(fields.prefix(5))
        kind = String(values[0])
        mode = String(values[2])
        guard let pid = Int32(values[3]) else { return nil }
        self.pid = pid
        let id = values[4].split(separator: ":", omittingEmptySubsequences: false)
        guard id.count == 3, let major = UInt32(id[0], radix: 16), let minor = UInt32(id[1], radix: 16),
            let inode = UInt64(id[2])
        else { return nil }
        self.major = major
        self.minor = minor
        self.inode = inode
    }

    /// Every lock record of a `/proc/locks` text, in order.
    package static func parse(_ text: String) -> [ProcLocksEntry] {
        text.split(separator: "\n").compactMap { ProcLocksEntry(line: $0) }
    }
}
