import BAExclusiveControl
import BATestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct ProcLocksParsingTests {
    @Test func parsesHoldersWaitersAndOtherKinds() throws {
        let text = """
            1: FLOCK  ADVISORY  WRITE 12875 fe:00:16222522 0 EOF
            1: -> FLOCK  ADVISORY  WRITE 12990 fe:00:16222522 0 EOF
            2: POSIX  ADVISORY  READ 431 00:27:16229060 0 EOF
            3: OFDLCK ADVISORY  WRITE -1 103:02:77 0 EOF
            4: LEASE  ACTIVE    READ 99 08:01:5 0 EOF
            5: FLOCK  ADVISORY  READ 0 fe:00:9 0 EOF
            not a lock line
            6: FLOCK  ADVISORY  WRITE 1 zz:00:9 0 EOF
            """
        let entries = ProcLocksEntry.parse(text)
        #expect(entries.count == 6)
        let holder = try #require(entries.first)
        #expect(holder.kind == "FLOCK" && !holder.isWaiter && holder.mode == "WRITE")
        #expect(holder.pid == 12875 && holder.major == 0xfe && holder.minor == 0 && holder.inode == 16_222_522)
        #expect(entries[1].isWaiter && entries[1].pid == 12990 && entries[1].inode == 16_222_522)
        #expect(entries[2].kind == "POSIX" && entries[2].major == 0 && entries[2].minor == 0x27)
        #expect(entries[3].kind == "OFDLCK" && entries[3].pid == -1 && entries[3].major == 0x103)
        #expect(entries[4].kind == "LEASE" && entries[4].mode == "READ")
        #expect(entries[5].pid == 0)
    }

    @Test func splitsDeviceNumbersAsGlibcDoes() {
        #expect(ExclusiveControlLock.deviceNumbers(65024) == (0xfe, 0))  // fe:00, ext4 on /dev/vda here
        #expect(ExclusiveControlLock.deviceNumbers(39) == (0, 0x27))  // 00:27, an overlayfs mount
        #expect(ExclusiveControlLock.deviceNumbers(0x10301) == (259, 1))  // nvme0n1p1
        // makedev(0x1000, 0x12345): both numbers past their 12- and 8-bit low parts.
        #expect(ExclusiveControlLock.deviceNumbers(0x0000_1000_1230_0045) == (0x1000, 0x12345))
    }
}

/// `ExclusiveControlLock.holder(path:)` against real locks, taken in this process and by others.
@Suite(.timeLimit(.minutes(1))) struct LockHolderTests {
    /// Polls `condition` every millisecond or so until it holds or `seconds` pass.
    func eventually(within seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(1000)
        }
        return try condition()
    }

    @Test func freeHeldAndMissingFiles() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = ExclusiveControlLock.path(inContainer: directory.path)
        #expect(try ExclusiveControlLock.holder(path: path) == nil, "no file: not held")
        #expect(!FileManager.default.fileExists(atPath: path), "the probe does not create the file")

        let lock = try ExclusiveControlLock(path: path)
        #expect(try ExclusiveControlLock.holder(path: path) == nil, "opened, not locked")
        try lock.acquire(timeoutMilliseconds: 0)
        #expect(try ExclusiveControlLock.holder(path: path) == .init(pid: getpid()))
        try lock.release()
        #expect(try ExclusiveControlLock.holder(path: path) == nil)

        // A lock on another file in the same folder is not this one's.
        let other = try ExclusiveControlLock(path: directory.path + "/other.lock")
        try other.acquire(timeoutMilliseconds: 0)
        #expect(try ExclusiveControlLock.holder(path: path) == nil)
        try other.release()
    }

    @Test func anotherProcessHoldsItUntilItIsKilled() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = ExclusiveControlLock.path(inContainer: directory.path)
        let child = try LockHoldingProcess(path: path)
        defer { child.release() }
        let pid = child.pid
        #expect(try eventually { try ExclusiveControlLock.holder(path: path) != nil }, "flock never took the lock")
        #expect(try ExclusiveControlLock.holder(path: path) == .init(pid: pid))

        // A contender's try-once fails while held, and probing again does not change the answer.
        let contender = try ExclusiveControlLock(path: path)
        #expect(throws: ExclusiveControlLock.Failure.notAcquired) { try contender.acquire(timeoutMilliseconds: 0) }
        for _ in 0..<100 { _ = try ExclusiveControlLock.holder(path: path) }
        #expect(throws: ExclusiveControlLock.Failure.notAcquired) { try contender.acquire(timeoutMilliseconds: 0) }

        child.release()  // SIGKILL
        #expect(try eventually { try ExclusiveControlLock.holder(path: path) == nil }, "the kernel kept the lock")
        try contender.acquire(timeoutMilliseconds: 0)
        #expect(try ExclusiveControlLock.holder(path: path) == .init(pid: getpid()))
        try contender.release()
    }
}
