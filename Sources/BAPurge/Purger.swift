#if canImport(Glibc)
    import Glibc
#endif

/// What happened to one planned deletion.
package struct PurgeResult: Sendable, Equatable {
    /// What happened.
    package enum Outcome: Sendable, Equatable {
        /// The file was deleted; `bytes` is its size.
        case deleted(bytes: Int64)
        /// The file was kept because it changed since planning: gone, modified, replaced by another
        /// file, or now open by a process. The reason is for a person.
        case kept(reason: String)
        /// The file could not be checked or deleted (`lstat` or `unlink` failed); the message
        /// names the call and the error.
        case failed(message: String)
    }

    /// The record.
    package var asset: TrackedAsset
    /// The path the plan deletes.
    package var path: String
    /// What happened.
    package var outcome: Outcome

    /// Creates a result.
    package init(asset: TrackedAsset, path: String, outcome: Outcome) {
        self.asset = asset
        self.path = path
        self.outcome = outcome
    }
}

/// Carries out a ``PurgePlan``: deletes its files, each only if it is still what was planned.
///
/// Just before each `unlink`, it checks the file at the planned path again: the same device,
/// inode, size and modification time as the record, and no process has it open or mapped (a fresh
/// `/proc` scan, see ``OpenFiles``). A file that fails a check is kept and reported. A window
/// remains between the check and the `unlink` (the kernel has no "unlink if this inode"); a
/// process that opens the file in it keeps its data until it closes it.
///
/// ```swift
/// for result in Purger().execute(plan) { print(result.path, result.outcome) }
/// ```
package struct Purger: Sendable {
    /// Finds the processes that have a file open.
    package var openFiles: OpenFiles

    /// Creates a purger.
    package init(openFiles: OpenFiles = OpenFiles()) {
        self.openFiles = openFiles
    }

    /// Deletes the plan's ``PurgePlan/deletions``, in order, and says what happened to each.
    package func execute(_ plan: PurgePlan) -> [PurgeResult] {
        plan.deletions.compactMap { entry in
            guard case .purgeable(let path, _, _) = entry.status else { return nil }
            return PurgeResult(asset: entry.asset, path: path, outcome: delete(entry.asset, at: path))
        }
    }

    private func delete(_ asset: TrackedAsset, at path: String) -> PurgeResult.Outcome {
        let identity: FileIdentity?
        do {
            identity = try FileIdentity.read(path: path)
        } catch {
            if error.code == .notARegularFile { return .kept(reason: "kept: replaced by something other than a file") }
            return .failed(message: error.message)
        }
        guard let identity else { return .kept(reason: "kept: gone since planning") }
        guard identity.key == asset.key else { return .kept(reason: "kept: replaced by another file since planning") }
        if identity.size != asset.size || identity.modificationTimeNanoseconds != asset.modificationTimeNanoseconds {
            let modification = AssetStatus.Modification(
                recordedSize: asset.size, size: identity.size,
                recordedModificationTimeNanoseconds: asset.modificationTimeNanoseconds,
                modificationTimeNanoseconds: identity.modificationTimeNanoseconds)
            return .kept(reason: "kept: modified since planning (\(modification))")
        }
        let pids = openFiles.scan(for: [asset.key]).pids(of: asset.key)
        if !pids.isEmpty {
            return .kept(
                reason:
                    "kept: open by \(pids.count == 1 ? "pid" : "pids") \(pids.map(String.init).joined(separator: ", "))"
            )
        }
        guard unlink(path) == 0 else {
            let code = errno
            if code == ENOENT { return .kept(reason: "kept: gone since planning") }
            return .failed(message: PurgeError.system("unlink", path: path, errno: code).message)
        }
        return .deleted(bytes: identity.size)
    }
}
