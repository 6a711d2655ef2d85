import BAHashing
import BAPackManifest
import Foundation
import SystemPackage

/// Assembles one version of a pack in its staging folder, then makes it a complete version:
/// `ROOT/.background-assets/packs/ID/N.staging` becomes `…/ID/N` (see ``PackInstallation`` for
/// the layout and the switch).
///
/// Every chunk is checked against its SHA-256 before it is written, every file against its
/// SHA-256 before the version is complete. Nothing is trusted from the disk: a resume (after
/// `kill -9` or a power loss) keeps only the chunks that hash right. Below `ROOT` no symbolic
/// link is followed: a link planted in the staging or version folders (by a process of the
/// same user, such as a sandboxed app that may write only its own container) is an error or is
/// removed as a link, never a way to write elsewhere.
///
/// Not thread-safe: use one object from one thread or serial queue at a time. Not `Sendable`:
/// it keeps open descriptors and progress counters that only that one user touches.
///
/// ```swift
/// let staging = try PackStaging(root: container, plan: PackPlan(target: v2, installed: v1))
/// var needed = try staging.prepare()
/// needed = try staging.copyFromInstalled(needed)
/// for sha256 in needed { try frame(sha256).withUnsafeBytes { try staging.accept(sha256: sha256, frame: $0) } }
/// try staging.finish()
/// try PackInstallation.switchCurrent(root: container, id: v2.id, version: v2.version)
/// ```
package final class PackStaging {
    /// The app's container.
    package let root: String
    /// What to assemble, and from where.
    package let plan: PackPlan
    /// Uncompressed bytes of the target's files already in place (each placement of a chunk
    /// counts), out of `plan.totalBytes`: basd's progress.
    package private(set) var bytesPresent: Int64 = 0
    /// The chunks (SHA-256) not yet in place, after ``prepare()``.
    package private(set) var needed: Set<String> = []
    /// A repair: version `N` is current and damaged. It is staged again beside itself (the plan
    /// takes every chunk that still hashes right from it), and ``finish()`` swaps the two folders
    /// in one step (`renameat2`'s `RENAME_EXCHANGE`): a reader sees the damaged version or the
    /// repaired one, never neither. The damaged one is left as `N.replaced` for
    /// ``PackInstallation/removeReplaced(root:id:version:)`` once nothing holds it.
    package var repair = false

    private enum State {
        case created
        case staging
        /// The version folder is complete and verified.
        case complete
    }
    private var state = State.created
    let paths: [[Substring]]
    private let files: Set<String>
    private let folders: Set<String>
    private var id: String { plan.target.id }
    var versionName: String { "\(plan.target.version)" }
    private var stagingName: String { "\(plan.target.version).staging" }
    var packsDisplay: String { root + "/" + PackInstallation.packsFolder(id: id) }
    private var stagingDisplay: String { packsDisplay + "/" + stagingName }

    var packs: Descriptor?
    private var staging: Descriptor?
    /// Open staging files by index, and installed files by path; a bounded number, as a pack
    /// may have more files than the process may open.
    private var stagingFiles: [Int: Descriptor] = [:]
    /// Target files hard-linked from the installed version (``PackPlan/unchangedFiles``, checked
    /// whole first): complete, read-only and durable already, never opened for writing.
    private var linked: Set<Int> = []
    /// Each file's SHA-256 as its chunks are placed in order (a chunk placed ahead is read back
    /// when the ones before it are in), so ``finish()`` need not read a freshly assembled file
    /// again: by file index, the hasher, how many of its chunks it has taken, which are placed.
    private var hashers: [Int: SHA256Hasher] = [:]
    private var hashedChunks: [Int: Int] = [:]
    private var placedChunks: [Int: [Bool]] = [:]
    /// Each file's chunk positions by offset.
    private let positions: [[Int64: Int]]
    /// Files found with bytes in place when staging was prepared (a resume), which ``finish()``
    /// reads whole: their chunks were not placed in order here.
    private var checkWhole: Set<Int> = []
    var installedFiles: [String: Descriptor] = [:]
    static let openLimit = 64

    /// A staging for `plan.target` in the container `root`. Touches no file.
    ///
    /// - Throws: ``PackError`` if the target index (or a path the plan reads from the installed
    ///   version) is not safe to install: see ``PackIndex/checkInstallable()``.
    package init(root: String, plan: PackPlan) throws(PackError) {
        try plan.target.checkInstallable()
        var paths: [[Substring]] = []
        var folders: Set<String> = []
        for file in plan.target.files {
            let components = try PackIndex.checkPath(file.path, in: plan.target.id)
            paths.append(components)
            for end in components.indices.dropLast() {
                folders.insert(components[...end].joined(separator: "/"))
            }
        }
        for item in plan.items {
            switch item.source {
            case .installed(let path, _): _ = try PackIndex.checkPath(path, in: plan.target.id)
            case .otherPack(let pack, _, let path, _):
                guard PackManifest.isValidID(pack) else { throw PackError("\(pack) is not a pack id") }
                _ = try PackIndex.checkPath(path, in: pack)
            case .fetch: break
            }
        }
        self.root = root
        self.plan = plan
        self.positions = plan.target.files.map { file in
            var offset: Int64 = 0
            var positions: [Int64: Int] = [:]
            for (position, chunk) in file.chunks.enumerated() {
                positions[offset] = positions[offset] ?? position
                offset += Int64(chunk.length)
            }
            return positions
        }
        self.paths = paths
        self.files = Set(plan.target.files.map(\.path))
        self.folders = folders
    }

    /// Makes the staging folder ready and says which chunks are still needed.
    ///
    /// Creates `N.staging` and every file of the target (sparse, sized with `ftruncate`) if
    /// absent. If it exists (a resume), keeps what is right: a chunk counts as present only if
    /// every place it goes hashes right (a range that is all hole is missing without a read); a
    /// chunk right in one place and wrong in another is copied over the wrong ones. Files of the
    /// wrong size are truncated to their size; anything in staging not in the index is removed.
    ///
    /// If version `N` exists already (finished before a crash that came before the switch), it
    /// is verified (every file's size and SHA-256): if right, nothing is needed, any staging is
    /// removed and ``finish()`` has nothing to do; if wrong, it is removed and staged again
    /// unless it is the current version, which is an error (it needs a repair, not an update).
    ///
    /// - Returns: the SHA-256s of the chunks still needed (also ``needed``).
    /// - Throws: ``PackError`` on a link or a non-folder in a folder's place, or an I/O error.
    package func prepare() throws(PackError) -> Set<String> {
        stagingFiles = [:]
        installedFiles = [:]
        hashers = [:]
        hashedChunks = [:]
        placedChunks = [:]
        checkWhole = []
        let packs = try PackInstallation.openPacks(root: root, id: id, create: true)
        self.packs = packs
        if !repair,
            let info = try PackFileSystem.status(versionName, in: packs, display: packsDisplay + "/" + versionName)
        {
            if info.type == .directory, verifiedVersion(in: packs) {
                try PackFileSystem.removeTree(stagingName, in: packs, display: stagingDisplay)
                state = .complete
                needed = []
                bytesPresent = plan.totalBytes
                return []
            }
            // A link that cannot be read counts as pointing here: never remove what may be current.
            let current: Int?
            do { current = try PackInstallation.current(root: root, id: id) } catch { current = plan.target.version }
            if current == plan.target.version {
                throw PackError(
                    "version \(versionName) of pack \(id) is current but does not match its index; repair it")
            }
            try PackFileSystem.removeTree(versionName, in: packs, display: packsDisplay + "/" + versionName)
        }
        let staging = try PackFileSystem.openFolder(
            stagingName, in: packs, create: true, writable: true, display: stagingDisplay)
        self.staging = staging
        try clean(staging, prefix: "")
        linked = []
        for (index, file) in plan.target.files.enumerated() {
            let parent = try PackFileSystem.openFolders(
                paths[index].dropLast(), in: staging, create: true, writable: true, display: stagingDisplay)
            let name = String(paths[index].last!)
            let display = stagingDisplay + "/" + file.path
            if let source = plan.unchangedFiles[index], try link(index, from: source, into: parent, name: name) {
                linked.insert(index)
                continue
            }
            // A file made read-only by a finish() that a crash cut short gets its write bit back.
            if let info = try PackFileSystem.status(name, in: parent, display: display),
                info.type == .regular, info.mode.rawValue & S_IWUSR == 0,
                let readOnly = try PackFileSystem.openFile(name, in: parent, .readOnly, display: display)
            {
                try PackFileSystem.setMode(readOnly, 0o644, failure: "cannot make \(display) writable")
            }
            guard
                let descriptor = try PackFileSystem.openFile(
                    name, in: parent, .readWrite, options: .create, display: display)
            else { throw PackError("cannot create \(display)") }
            if try PackFileSystem.status(of: descriptor, display: display).size != file.size {
                try PackFileSystem.resize(descriptor, to: file.size, display: display)
            }
            remember(index, descriptor)
        }
        try scan()
        state = .staging
        return needed
    }

    /// Takes `chunks` (SHA-256s, normally ``needed``) from the installed version where the plan
    /// finds them (`…/packs/ID/OLD/PATH`, only read, so read-only files are fine): reads each at
    /// its offset, checks its SHA-256 (the app or a disk may have changed the file) and writes
    /// it to every place it goes.
    ///
    /// Once the version is complete (``prepare()`` found it so), nothing is needed: returns empty.
    ///
    /// - Returns: the chunks that could not be taken from there, to fetch instead.
    /// - Throws: ``PackError`` if a chunk is not the target's, or on an error writing staging.
    package func copyFromInstalled(_ chunks: Set<String>) throws(PackError) -> Set<String> {
        if state == .complete { return [] }
        try requireStaging()
        var left: Set<String> = []
        for sha256 in chunks {
            guard let index = plan.itemIndex(sha256) else {
                throw PackError("chunk \(sha256) is not in version \(versionName) of pack \(id)")
            }
            guard needed.contains(sha256) else { continue }
            let item = plan.items[index]
            let read: [UInt8]? =
                switch item.source {
                case .installed(let path, let offset):
                    readInstalled(path: path, offset: offset, length: item.chunk.length)
                case .otherPack(let pack, let version, let path, let offset):
                    readOtherPack(pack, version: version, path: path, offset: offset, length: item.chunk.length)
                case .fetch: nil
                }
            guard let bytes = read,
                bytes.withUnsafeBytes({ SHA256Hasher.hex(of: $0) }) == sha256
            else {
                left.insert(sha256)
                continue
            }
            try bytes.withBytes { bytes throws(PackError) in try place(index, bytes) }
        }
        return left
    }

    /// Takes a downloaded chunk: decompresses its zstd `frame` (to the length the index gives),
    /// checks the SHA-256 of the bytes against `sha256`, and writes them to every place the
    /// chunk goes. Once the version is complete, a frame is ignored.
    ///
    /// - Throws: ``PackError`` naming the chunk if it is not the target's, or the frame is
    ///   damaged or holds other bytes; then nothing is written.
    package func accept(sha256: String, frame: UnsafeRawBufferPointer) throws(PackError) {
        if state == .complete { return }
        try requireStaging()
        guard let index = plan.itemIndex(sha256) else {
            throw PackError("chunk \(sha256) is not in version \(versionName) of pack \(id)")
        }
        let bytes: [UInt8]
        do {
            bytes = try Zstd.decompress(frame, length: plan.items[index].chunk.length)
        } catch {
            throw PackError("chunk \(sha256) of pack \(id): \(error)", code: .badContent)
        }
        let actual = bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
        guard actual == sha256 else {
            throw PackError(
                "chunk \(sha256) of pack \(id) arrived with other bytes (SHA-256 \(actual)); fetch it again",
                code: .badContent)
        }
        try bytes.withBytes { bytes throws(PackError) in try place(index, bytes) }
    }

    /// Makes the staging folder version `N`: checks every file's size and SHA-256, makes it
    /// read-only and readable (``installedMode(_:)``: 0444, or 0555 with an x bit) and `fsync`s it, then
    /// each folder (0555, after its contents), then renames `N.staging` to `N` and `fsync`s
    /// `packs/ID`. Does nothing if ``prepare()`` found version `N` complete already.
    ///
    /// - Throws: ``PackError`` if chunks are still needed, naming a file that does not match
    ///   its index (call ``prepare()`` again: it finds the damaged chunks), or on an I/O error.
    package func finish() throws(PackError) {
        if state == .complete { return }
        try requireStaging()
        guard needed.isEmpty else {
            throw PackError("\(needed.count) chunks of version \(versionName) of pack \(id) are still needed")
        }
        guard let packs, let staging else { throw PackError("prepare() first") }
        stagingFiles = [:]
        installedFiles = [:]
        for (index, file) in plan.target.files.enumerated() where !linked.contains(index) {
            let display = stagingDisplay + "/" + file.path
            let parent = try PackFileSystem.openFolders(paths[index].dropLast(), in: staging, display: stagingDisplay)
            guard
                let descriptor = try PackFileSystem.openFile(
                    String(paths[index].last!), in: parent, .readOnly, display: display)
            else { throw PackError("\(display) is missing") }
            // A file hashed in order as it was assembled is not read again; its size is checked.
            let hashed = hashedWhole(index)
            let right =
                if let hashed {
                    hashed && (try? PackFileSystem.status(of: descriptor, display: display))?.size == file.size
                } else {
                    try Self.matches(descriptor, file, display: display)
                }
            guard right else {
                throw PackError("\(display) does not match its size and SHA-256 in the index; prepare() again")
            }
            try PackFileSystem.setMode(
                descriptor, Self.installedMode(file.mode), failure: "cannot make \(display) read-only")
            try PackFileSystem.sync(descriptor, display: display)
        }
        // Deepest folders first, so each is read-only only after its contents are.
        let deepestFirst = folders.sorted {
            ($0.split(separator: "/").count, $0) > ($1.split(separator: "/").count, $1)
        }
        for folder in deepestFirst {
            let display = stagingDisplay + "/" + folder
            let descriptor = try PackFileSystem.openFolders(
                folder.split(separator: "/"), in: staging, display: stagingDisplay)
            try PackFileSystem.setMode(descriptor, 0o555, failure: "cannot make \(display) read-only")
            try PackFileSystem.sync(descriptor, display: display)
        }
        try PackFileSystem.setMode(staging, 0o555, failure: "cannot make \(stagingDisplay) read-only")
        try PackFileSystem.sync(staging, display: stagingDisplay)
        if repair {
            // The repaired folder takes the damaged one's name in one step; the damaged one then
            // leaves the staging name for `N.replaced` (a replaced one left before goes first).
            try PackFileSystem.exchange(
                stagingName, with: versionName, in: packs,
                failure:
                    "cannot swap \(stagingDisplay) with version \(versionName) (the file system must support renameat2's RENAME_EXCHANGE)"
            )
            let replaced = versionName + ".replaced"
            try PackFileSystem.removeTree(replaced, in: packs, display: packsDisplay + "/" + replaced)
            try PackFileSystem.rename(
                stagingName, to: replaced, in: packs,
                failure: "cannot rename the replaced \(stagingDisplay) to \(replaced)")
        } else {
            try PackFileSystem.rename(
                stagingName, to: versionName, in: packs, failure: "cannot rename \(stagingDisplay) to \(versionName)")
        }
        try PackFileSystem.sync(packs, display: packsDisplay)
        self.staging = nil
        state = .complete
    }

    // MARK: - Inside

    private func requireStaging() throws(PackError) {
        guard state == .staging else {
            throw PackError(
                state == .created ? "prepare() the staging of pack \(id) first" : "version \(versionName) is complete")
        }
    }

    /// Removes what is in staging but not in the index; a link where the index has a path is refused.
    private func clean(_ folder: Descriptor, prefix: String) throws(PackError) {
        let shown = prefix.isEmpty ? stagingDisplay : stagingDisplay + "/" + prefix
        for name in try PackFileSystem.names(in: folder, display: shown) {
            let path = prefix.isEmpty ? name : prefix + "/" + name
            let display = stagingDisplay + "/" + path
            guard let info = try PackFileSystem.status(name, in: folder, display: display) else { continue }
            switch info.type {
            case .directory where folders.contains(path):
                try clean(
                    try PackFileSystem.openFolder(name, in: folder, writable: true, display: display), prefix: path)
            case .regular where files.contains(path):
                continue
            case .symbolicLink where files.contains(path) || folders.contains(path):
                throw PackError("\(display) is a symbolic link; refused (remove the staging folder)")
            default:
                try PackFileSystem.removeTree(name, in: folder, display: display)
            }
        }
    }

    /// Which chunks are in place: reads and hashes every placement that is not a hole.
    private func scan() throws(PackError) {
        needed = []
        bytesPresent = 0
        let largest = plan.items.map(\.chunk.length).max() ?? 0
        var buffer = [UInt8](repeating: 0, count: largest)
        for item in plan.items {
            let length = item.chunk.length
            var good: [UInt8]?
            var bad: [PackPlan.Placement] = []
            for placement in item.placements {
                // A linked file was checked whole when it was linked.
                if linked.contains(placement.file) { continue }
                let file = try stagingFile(placement.file)
                let display = stagingDisplay + "/" + plan.target.files[placement.file].path
                let right = try buffer.withMutableBytes { whole throws(PackError) -> Bool in
                    let bytes = UnsafeMutableRawBufferPointer(rebasing: whole[0..<length])
                    guard !PackFileSystem.isHole(file, offset: placement.offset, length: length),
                        try PackFileSystem.readFully(file, into: bytes, at: placement.offset, display: display)
                    else { return false }
                    return SHA256Hasher.hex(of: UnsafeRawBufferPointer(bytes)) == item.chunk.sha256
                }
                if !right {
                    bad.append(placement)
                } else {
                    checkWhole.insert(placement.file)
                    if good == nil { good = Array(buffer[0..<length]) }
                }
            }
            if let good {
                bytesPresent += Int64(length) * Int64(item.placements.count)
                for placement in bad {
                    try write(good, at: placement)
                    checkWhole.insert(placement.file)
                }
            } else if bad.isEmpty {
                // Every place it goes is in a linked file.
                bytesPresent += Int64(length) * Int64(item.placements.count)
            } else {
                needed.insert(item.chunk.sha256)
            }
        }
    }

    /// Writes a verified chunk to every place it goes, and counts it present.
    private func place(_ index: Int, _ bytes: UnsafeRawBufferPointer) throws(PackError) {
        let item = plan.items[index]
        for placement in item.placements where !linked.contains(placement.file) {
            let display = stagingDisplay + "/" + plan.target.files[placement.file].path
            try PackFileSystem.writeFully(
                try stagingFile(placement.file), bytes, at: placement.offset, display: display)
            try hash(bytes, placedAt: placement)
            startWriteback(placement.file, after: bytes.count)
        }
        if needed.remove(item.chunk.sha256) != nil {
            bytesPresent += Int64(item.chunk.length) * Int64(item.placements.count)
        }
    }

    /// Feeds file `placement.file`'s hasher: `bytes` if they are its next chunk, then every
    /// chunk after it that is placed already (read back from staging).
    private func hash(_ bytes: UnsafeRawBufferPointer, placedAt placement: PackPlan.Placement) throws(PackError) {
        let index = placement.file
        guard !checkWhole.contains(index), let position = positions[index][placement.offset] else { return }
        let chunks = plan.target.files[index].chunks
        if placedChunks[index] == nil {
            placedChunks[index] = [Bool](repeating: false, count: chunks.count)
            hashers[index] = SHA256Hasher()
            hashedChunks[index] = 0
        }
        guard let hasher = hashers[index], var next = hashedChunks[index] else { return }
        placedChunks[index]?[position] = true
        guard position == next else { return }
        hasher.update(bytes)
        next += 1
        var offset = placement.offset + Int64(bytes.count)
        while next < chunks.count, placedChunks[index]?[next] == true {
            let length = chunks[next].length
            var buffer = [UInt8](repeating: 0, count: length)
            let display = stagingDisplay + "/" + plan.target.files[index].path
            let file = try stagingFile(index)
            let read = try buffer.withMutableBytes { whole throws(PackError) -> Bool in
                try PackFileSystem.readFully(file, into: whole, at: offset, display: display)
            }
            guard read else {
                checkWhole.insert(index)
                return
            }
            buffer.withUnsafeBytes { hasher.update($0) }
            offset += Int64(length)
            next += 1
        }
        hashedChunks[index] = next
        // A complete file goes to the disk now, not all at once in finish()'s fsyncs.
        if next == chunks.count, let file = stagingFiles[index] {
            PackFileSystem.startWriteback(file)
            unflushed[index] = 0
        }
    }

    /// Bytes written to each staging file since its writeback was last started.
    private var unflushed: [Int: Int] = [:]

    /// Starts the kernel's writeback of a staging file every 8 MiB written to it, so the fsync
    /// in ``finish()`` has little left to flush (the flush overlaps the download).
    private func startWriteback(_ index: Int, after count: Int) {
        let total = unflushed[index, default: 0] + count
        guard total >= 8 << 20, let file = stagingFiles[index] else {
            unflushed[index] = total
            return
        }
        PackFileSystem.startWriteback(file)
        unflushed[index] = 0
    }

    /// Whether file `index` was hashed whole as it was assembled, with the index's SHA-256.
    private func hashedWhole(_ index: Int) -> Bool? {
        let file = plan.target.files[index]
        guard !checkWhole.contains(index) else { return nil }
        if file.chunks.isEmpty { return nil }
        guard hashedChunks[index] == file.chunks.count, let hasher = hashers[index] else { return nil }
        return hasher.finalizeHex() == file.sha256
    }

    private func write(_ bytes: [UInt8], at placement: PackPlan.Placement) throws(PackError) {
        let display = stagingDisplay + "/" + plan.target.files[placement.file].path
        let file = try stagingFile(placement.file)
        try bytes.withBytes { bytes throws(PackError) in
            try PackFileSystem.writeFully(file, bytes, at: placement.offset, display: display)
        }
    }

    /// Staging file `index`, opened read-write without following links.
    private func stagingFile(_ index: Int) throws(PackError) -> Descriptor {
        if let open = stagingFiles[index] { return open }
        guard let staging else { throw PackError("prepare() the staging of pack \(id) first") }
        let display = stagingDisplay + "/" + plan.target.files[index].path
        let parent = try PackFileSystem.openFolders(paths[index].dropLast(), in: staging, display: stagingDisplay)
        guard
            let descriptor = try PackFileSystem.openFile(
                String(paths[index].last!), in: parent, .readWrite, display: display)
        else { throw PackError("\(display) is missing") }
        remember(index, descriptor)
        return descriptor
    }

    private func remember(_ index: Int, _ descriptor: Descriptor) {
        if stagingFiles.count >= Self.openLimit { stagingFiles = [:] }
        stagingFiles[index] = descriptor
    }

    /// Links the installed version's file at `path` into staging as target file `index` when it
    /// is whole (size and SHA-256, read once), instead of copying its chunks: an update that
    /// leaves most files as they were writes only the others. Both versions are read-only, so
    /// the shared file never changes under either. A staging entry that is already that link (a
    /// resume) is checked the same way; anything else there is left to the normal path. False:
    /// not linked (the installed file is gone, changed, or the link failed).
    private func link(_ index: Int, from path: String, into parent: Descriptor, name: String) throws(PackError) -> Bool
    {
        guard let installed = plan.installedVersion, let packs else { return false }
        let file = plan.target.files[index]
        let display = packsDisplay + "/\(installed)/" + path
        guard let (sourceParent, source) = Self.openVersionFile(path, version: installed, in: packs, display: display)
        else { return false }
        guard let sourceInfo = try? PackFileSystem.status(of: source, display: display),
            sourceInfo.mode.rawValue & 0o7777 == Self.installedMode(file.mode)
        else { return false }
        let stagingDisplay = self.stagingDisplay + "/" + file.path
        if let existing = try PackFileSystem.status(name, in: parent, display: stagingDisplay) {
            guard existing.deviceID == sourceInfo.deviceID, existing.inode == sourceInfo.inode else { return false }
            if try Self.matches(source, file, display: display) { return true }
            // Our link to a file that changed since: not to be written through.
            try PackFileSystem.remove(name, in: parent, absentIsFine: false, display: stagingDisplay)
            return false
        }
        guard try Self.matches(source, file, display: display) else { return false }
        do {
            let sourceName = String(path.split(separator: "/").last!)
            try PackFileSystem.hardLink(sourceName, in: sourceParent, as: name, in: parent, display: stagingDisplay)
            return true
        } catch {
            // Not linked (another file system, too many links): the chunks are copied instead.
            return false
        }
    }
}
