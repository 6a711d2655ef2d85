import BADownloadEngine
import BAPacks
import Foundation

/// Where one unit's body goes as it lands (a bundle, or a chunk file: one frame): straight into
/// staging, frame by frame, with no copy of the unit on the disk (issue 34).
///
/// The frames' places come from the signed index (a bundle's frames back to back, each chunk's
/// `storedLength`), so the engine fetches the unit as a content-addressed download
/// (``DownloadSink``): a resume asks for `Range: bytes=N-` with no validator, N the offset of the
/// first frame still needed (``rewind()``): after a `kill -9` or a cut connection only the frame
/// that was arriving is fetched again. Each complete frame goes to ``PackStaging/accept(sha256:frame:)``
/// (decompressed, its SHA-256 checked, written where the index places it); a frame that does not
/// hash right never lands and ends the fetch (``rejection``). Frames no longer needed (staged by an
/// earlier attempt) are skipped unread. At most one frame is held in memory, as long as the index
/// allows (``PackLimits/maximumStoredLength(_:)``).
///
/// Its calls come from the engine thread; the staging is the job's, which no step of the job
/// touches while its units are in flight (``PackJob/StagingBox``, whose lock the sinks hold); once
/// the job stops, the box is closed and a sink still in flight writes nothing more.
final class PackUnitSink: DownloadSink, @unchecked Sendable {
    private let unit: PackJob.Unit
    private let box: PackJob.StagingBox
    private let log: @Sendable (String) -> Void
    /// The needed frames, by offset (decided at the first ``rewind()``: what staging still needs).
    private var frames: [(chunk: PackIndex.Chunk, offset: Int64)]?
    private var nextFrame = 0
    /// The unit offset of the next byte ``take(_:)`` gets.
    private var cursor: Int64 = 0
    /// The bytes of `frames[nextFrame]` so far.
    private var frame: [UInt8] = []
    private let lock = NSLock()
    private var rejectionStorage: PackError?

    init(unit: PackJob.Unit, staging: PackJob.StagingBox, log: @escaping @Sendable (String) -> Void) {
        self.unit = unit
        self.box = staging
        self.log = log
    }

    /// What staging refused (a frame with other bytes, a full disk): the job hears it as
    /// ``PackJobMachine/Input/rejected(_:_:)``.
    var rejection: PackError? { lock.withLock { rejectionStorage } }

    func rewind() -> Int64 {
        let frames = neededFrames()
        frame.removeAll()
        cursor = nextFrame < frames.count ? frames[nextFrame].offset : unit.size
        return cursor
    }

    func take(_ bytes: UnsafeRawBufferPointer) throws(DownloadError) {
        let frames = neededFrames()
        var rest = bytes[...]
        while !rest.isEmpty {
            guard nextFrame < frames.count else {
                // After the last needed frame: frames staged already.
                cursor += Int64(rest.count)
                return
            }
            let (chunk, offset) = frames[nextFrame]
            if cursor < offset {
                let skip = Int(min(Int64(rest.count), offset - cursor))
                cursor += Int64(skip)
                rest = rest.dropFirst(skip)
                continue
            }
            guard cursor == offset + Int64(frame.count) else {
                throw DownloadError(
                    .protocolViolation, "\(unit.path): frames overlap at \(offset) (the index is wrong)")
            }
            if frame.isEmpty { frame.reserveCapacity(chunk.storedLength) }
            let count = min(chunk.storedLength - frame.count, rest.count)
            frame.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(count)))
            cursor += Int64(count)
            rest = rest.dropFirst(count)
            if frame.count == chunk.storedLength {
                try accept(chunk)
                nextFrame += 1
                frame = []
            }
        }
    }

    func finish() throws(DownloadError) {
        guard nextFrame >= (frames?.count ?? 0) else {
            throw DownloadError(
                .protocolViolation, "\(unit.path) ended with \((frames?.count ?? 0) - nextFrame) frame(s) missing")
        }
    }

    func note(_ message: String) { log(message) }

    /// The unit's frames that staging still needs, in order; decided once.
    private func neededFrames() -> [(chunk: PackIndex.Chunk, offset: Int64)] {
        if let frames { return frames }
        let needed = box.lock.withLock { box.staging.needed }
        let made = unit.chunks.filter { needed.contains($0.0.sha256) }.sorted { $0.1 < $1.1 }.map {
            (chunk: $0.0, offset: $0.1)
        }
        frames = made
        return made
    }

    /// Hands the complete frame to staging.
    private func accept(_ chunk: PackIndex.Chunk) throws(DownloadError) {
        let written: Result<Void, PackError>? = box.whileOpen { staging in
            frame.withUnsafeBytes { buffer in
                Result { () throws(PackError) in try staging.accept(sha256: chunk.sha256, frame: buffer) }
            }
        }
        guard let result = written else {
            throw DownloadError(.cancelled, "\(unit.path): the pack's job stopped; no more of it is written")
        }
        switch result {
        case .success: break
        case .failure(let error):
            lock.withLock { rejectionStorage = error }
            throw DownloadError(
                error.isNoSpace ? .noSpace : error.code == .badContent ? .checksumMismatch : .fileSystem,
                "\(unit.path): \(error)")
        }
    }
}
