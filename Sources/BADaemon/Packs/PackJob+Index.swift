import BACore
import BADaemonProtocol
import BAPacks
import Foundation

/// The index of a job's version, once its bytes are the manifest's (``loadIndex(_:)``): format 1
/// decoded at once; format 2's root decoded, then each part taken from the app's part store
/// (`ROOT/meta/`, where the parts of its local versions are kept) when the store has it with the
/// right SHA-256, else fetched, checked against the root's SHA-256 before it is decompressed, and
/// kept. An update thus fetches only the parts of the files that changed.
extension PackService {
    /// Parts fetched at once.
    static let indexPartWindow = 8

    /// The app's store of index parts (``PackIndexRoot/partsRoot(forIndexAt:)`` of its indexes).
    func indexPartsRoot(app: String) -> String { containers.packRoot(app: app) }

    /// Decodes `bytes` (already checked against the manifest's SHA-256) and answers the job with
    /// the index, after fetching the parts it lacks.
    func resolveIndex(_ bytes: [UInt8], of job: PackJob) {
        let document: PackIndex.Document
        do { document = try PackIndex.Document.decode(bytes) } catch {
            run(job, .indexLoaded(.failure(refusedIndex(job, error))))
            return
        }
        switch document {
        case .whole(let index): run(job, .indexLoaded(.success(index)))
        case .tree(let root):
            let fetch = IndexPartFetch(root: root)
            let store = indexPartsRoot(app: job.key.app)
            for (number, part) in root.parts.enumerated() where fetch.byName[part.sha256] == nil {
                // The store's copy if it is right; a missing or wrong one is fetched again.
                let path = store + "/" + PackIndexRoot.partPath(part.sha256)
                guard let frame = try? RegularFile.read(path, limit: part.storedLength),
                    case .success(let files) = frame.withUnsafeBytes({ buffer in
                        Result { () throws(PackError) in try root.files(of: part, frame: buffer) }
                    })
                else {
                    fetch.missing.append(number)
                    continue
                }
                fetch.found(files, for: part.sha256)
            }
            var queued: Set<String> = []
            // Reversed: taken from the end, in the root's order.
            fetch.queue = fetch.missing.filter { number in
                let name = root.parts[number].sha256
                return fetch.byName[name] == nil && queued.insert(name).inserted
            }.reversed()
            fetchIndexParts(fetch, for: job)
        }
    }

    private func refusedIndex(_ job: PackJob, _ error: PackError) -> PackFailure {
        PackFailure(
            "the index at \(job.entry.indexURL) is refused: \(error)", code: PackJobMachine.invalidMetadataCode)
    }

    /// Starts fetches up to the window; answers the job once every part is in (or one failed).
    private func fetchIndexParts(_ fetch: IndexPartFetch, for job: PackJob) {
        guard live(job), !fetch.failed else { return }
        if fetch.queue.isEmpty && fetch.inFlight == 0 {
            let result: Result<PackIndex, PackFailure>
            do throws(PackError) {
                result = .success(try fetch.root.assemble(fetch.root.parts.map { fetch.byName[$0.sha256] ?? [] }))
            } catch {
                result = .failure(refusedIndex(job, error))
            }
            run(job, .indexLoaded(result))
            return
        }
        guard let base = baseURL(job) else {
            fetch.failed = true
            run(
                job,
                .indexLoaded(
                    .failure(PackFailure("the index URL \(job.entry.indexURL) does not say where its parts are"))))
            return
        }
        let directory = fetchDirectory(app: job.key.app)
        while fetch.inFlight < Self.indexPartWindow, let number = fetch.queue.popLast() {
            let part = fetch.root.parts[number]
            do { try Self.makeDirectories(directory) } catch {
                fetch.failed = true
                run(job, .indexLoaded(.failure(PackFailure("cannot create \(directory): \(error)"))))
                return
            }
            fetchSequence += 1
            fetch.inFlight += 1
            let url = base + PackIndexRoot.partPath(part.sha256)
            transfers.fetchPackFile(
                .init(
                    id: "\(job.key.app)/index-part/\(fetchSequence)", url: url,
                    destination: directory + "/part-\(part.sha256)-\(fetchSequence)",
                    expectedSize: Int64(part.storedLength), byteLimit: Int64(part.storedLength), essential: true),
                for: job.app
            ) { [self] result in
                fetch.inFlight -= 1
                guard live(job), !fetch.failed else {
                    if case .success(let path) = result { unlink(path) }
                    return
                }
                switch result {
                case .failure(let failure):
                    fetch.failed = true
                    run(
                        job,
                        .indexLoaded(.failure(PackFailure("cannot fetch the index part \(url): \(failure.message)"))))
                case .success(let path):
                    defer { unlink(path) }
                    switch accept(part, of: fetch.root, fetched: path, app: job.key.app) {
                    case .failure(let error):
                        fetch.failed = true
                        run(job, .indexLoaded(.failure(refusedIndex(job, error))))
                    case .success(let files):
                        fetch.found(files, for: part.sha256)
                        fetchIndexParts(fetch, for: job)
                    }
                }
            }
        }
    }

    /// A fetched part: checked (its SHA-256 before anything else), decoded, and kept in the store.
    private func accept(
        _ part: PackIndexRoot.Part, of root: PackIndexRoot, fetched path: String, app: String
    ) -> Result<[PackIndex.File], PackError> {
        let frame: [UInt8]
        do { frame = try RegularFile.read(path, limit: part.storedLength) } catch {
            return .failure(
                .invalid("the fetched index part \(part.sha256) cannot be read: \(error)", check: "partSize"))
        }
        let files: [PackIndex.File]
        let decoded: Result<[PackIndex.File], PackError> = frame.withUnsafeBytes { buffer in
            Result { () throws(PackError) in try root.files(of: part, frame: buffer) }
        }
        switch decoded {
        case .failure(let error): return .failure(error)
        case .success(let found): files = found
        }
        // Kept for the next version; a part that cannot be kept is only fetched again then.
        let kept = indexPartsRoot(app: app) + "/" + PackIndexRoot.partPath(part.sha256)
        _ = logged("cannot keep the index part \(kept)") {
            try Self.makeDirectories((kept as NSString).deletingLastPathComponent)
            try Data(frame).write(to: URL(fileURLWithPath: kept), options: .atomic)
        }
        return .success(files)
    }

    /// Removes the parts no kept index of `app` names (after a version became local). Nothing is
    /// removed when an index cannot be read: then nothing is known to be unused.
    func sweepIndexParts(app: String) {
        let root = containers.packRoot(app: app)
        let indexes = root + "/indexes"
        var named: Set<String> = []
        let manager = FileManager.default
        guard let packs = logged("cannot list \(indexes)", { try manager.contentsOfDirectory(atPath: indexes) })
        else { return }
        for pack in packs {
            let folder = indexes + "/" + pack
            guard let names = logged("cannot list \(folder)", { try manager.contentsOfDirectory(atPath: folder) })
            else { return }
            for name in names where name.hasSuffix(".json") {
                let path = folder + "/" + name
                guard
                    let document = logged(
                        "\(path) cannot be read: index parts are kept",
                        {
                            try PackIndex.Document.decode(
                                try RegularFile.read(path, limit: PackLimits.maximumIndexBytes))
                        })
                else { return }
                if case .tree(let tree) = document { named.formUnion(tree.parts.map(\.sha256)) }
            }
        }
        let meta = root + "/meta"
        for prefix in (try? manager.contentsOfDirectory(atPath: meta)) ?? [] {
            for name in (try? manager.contentsOfDirectory(atPath: meta + "/" + prefix)) ?? []
            where !named.contains(name) {
                _ = logged("cannot remove an unused index part") {
                    try manager.removeItem(atPath: meta + "/" + prefix + "/" + name)
                }
            }
        }
    }
}

/// The parts of one root being gathered (on the executor).
final class IndexPartFetch {
    let root: PackIndexRoot
    /// The files of each part found so far, by part name.
    var byName: [String: [PackIndex.File]] = [:]
    /// Part numbers not in the store.
    var missing: [Int] = []
    /// Distinct parts still to fetch, the next one last.
    var queue: [Int] = []
    var inFlight = 0
    var failed = false

    init(root: PackIndexRoot) { self.root = root }

    func found(_ files: [PackIndex.File], for sha256: String) { byName[sha256] = files }
}
