import BACore
import BAExclusiveControl
import BAExtensionABI
internal import CBAExtension
internal import CBASystem
internal import CFFI

#if canImport(Glibc)
    import Glibc
#endif

/// `ba-extension-runner`: one process per call into an extension.
///
/// It speaks the runner protocol on fd 3 (see ``RunnerProtocol``): says hello, reads the request,
/// caps its own memory (RLIMIT_DATA) *before* loading the extension, dlopens it, validates the
/// descriptor, calls one entry point through `ffi_call` with a host-API table of libffi closures
/// (or several, one after another, for a request with more events), streams what the extension
/// does, and exits. The parent enforces the deadline and reads the
/// verdict from how the process ended. Kept free of Foundation: it starts for every call.
package enum ExtensionRunner {
    /// The protocol descriptor's number in the child.
    package static let protocolFD: Int32 = 3

    /// Exit statuses other than 0, for a parent that sees no message.
    package enum ExitStatus: Int32 {
        case noRequest = 2
        case badRequest = 3
        /// The jail or the sandbox could not be set up (`BA_RUNNER_EXIT_SANDBOX_UNAVAILABLE`).
        case sandboxUnavailable = 4
        /// A zygote that cannot serve: its host falls back to spawning a runner per call.
        case zygoteUnavailable = 5
    }

    /// Runs one call and exits.
    ///
    /// Confined first, while still single-threaded, as the command line says (``Jail``): a runner
    /// that cannot be confined as asked says why on stderr and exits with
    /// `BA_RUNNER_EXIT_SANDBOX_UNAVAILABLE` before its hello, so no extension code ever runs
    /// outside the sandbox it was promised.
    package static func main() -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == BA_RUNNER_ARG_ZYGOTE { Zygote.serve(arguments) }
        runCall(arguments)
    }

    /// One call, as the command line (or a zygote's request) says.
    static func runCall(_ arguments: [String]) -> Never {
        switch Jail.parse(arguments) {
        case .failure(let error):
            failBeforeHello(error)
        case .success(let jail?):
            if let error = jail.enter() { failBeforeHello(error) }
        case .success(nil):
            break
        }
        let channel = Channel(fd: protocolFD)
        channel.send(.hello(protocolVersion: RunnerProtocol.version))
        var decoder = FrameDecoder()
        let request: RunRequest
        do {
            guard let frame = try channel.receive(decoder: &decoder) else { exit(ExitStatus.noRequest.rawValue) }
            guard case .request(let decoded) = try HostMessage.decode(frame) else {
                exit(ExitStatus.badRequest.rawValue)
            }
            request = decoded
        } catch {
            channel.send(.failure(RunnerFailure(kind: .invalidRequest, message: "unreadable request: \(error)")))
            exit(ExitStatus.badRequest.rawValue)
        }
        // Whatever the extension prints to stdout goes to stderr, never into the protocol. Line
        // buffered, as on a terminal: stdout to a pipe is fully buffered, and the _exit below
        // would drop what `print` left in the buffer.
        dup2(2, 1)
        _ = ba_sys_line_buffer_stdout()
        exportAppGroupContainer(lockPath: request.lockPath)
        if let failure = prepare(memoryLimit: request.memoryLimitBytes) {
            channel.send(.failure(failure))
            exit(0)
        }
        callEach(request, channel: channel, decoder: decoder)
        // _exit: the extension may have left threads or atexit handlers behind; none of them
        // may run after the call has ended.
        _exit(0)
    }

    static func failBeforeHello(_ error: JailError) -> Never {
        let line = BA_RUNNER_SANDBOX_FAILURE_PREFIX + error.message + "\n"
        _ = line.withCString { ba_sys_write_all(2, $0, strlen($0)) }
        _exit(ExitStatus.sandboxUnavailable.rawValue)
    }

    static func prepare(memoryLimit: UInt64) -> RunnerFailure? {
        if ba_sys_install_crash_reporter(memoryLimit) != 0 {
            return RunnerFailure(kind: .invalidRequest, message: "cannot install the crash reporter (errno \(errno))")
        }
        if memoryLimit > 0 && ba_sys_set_data_limit(memoryLimit) != 0 {
            return RunnerFailure(
                kind: .invalidRequest, message: "cannot set RLIMIT_DATA to \(memoryLimit) bytes (errno \(errno))")
        }
        return nil
    }

    /// Names the call's app group container in `BA_APP_GROUP_CONTAINER` for the extension's code
    /// (`FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`, `getenv` in C), before
    /// the library is loaded. A call without a container removes the variable, so a value inherited
    /// from whoever started basd never names a container that is not this call's.
    static func exportAppGroupContainer(lockPath: String) {
        if let container = ExclusiveControlLock.containerPath(ofLockPath: lockPath) {
            setenv(RunnerProtocol.appGroupContainerVariable, container, 1)
        } else {
            unsetenv(RunnerProtocol.appGroupContainerVariable)
        }
    }

    /// What a loaded extension's calls need: its descriptor's context, the host table, and the
    /// library's identity.
    struct Loaded {
        let descriptor: ba_extension_desc
        let identity: ExtensionIdentity
        let invocation: Invocation
        let host: HostTable
    }

    /// Loads the extension once, then calls each event of the request in order, each ending with
    /// its own `finished`; the first failure is sent and ends the calls.
    static func callEach(_ request: RunRequest, channel: Channel, decoder: FrameDecoder) {
        let loaded: Loaded
        switch load(request, channel: channel) {
        case .failure(let failure):
            channel.send(.failure(failure))
            return
        case .success(let value):
            loaded = value
        }
        // One watcher for the whole process: it reads the socket for the host's warning of the
        // deadline of whichever call runs then.
        if request.event != .willTerminate,
            let willTerminate = address(of: .extensionWillTerminate, in: loaded.descriptor)
        {
            TerminationWatcher.start(
                channel: channel, decoder: decoder, function: willTerminate,
                context: UnsafeRawPointer(loaded.descriptor.context), host: UnsafeRawPointer(loaded.host.table))
        }
        for event in request.events {
            switch call(event, loaded, libraryPath: request.libraryPath) {
            case .failure(let failure):
                channel.send(.failure(failure))
                return
            case .success(let summary):
                channel.send(.finished(summary))
            }
        }
        withExtendedLifetime(loaded.host) {}
    }

    /// Opens the library, checks its descriptor, sends its identity and builds the host table.
    static func load(_ request: RunRequest, channel: Channel) -> Result<Loaded, RunnerFailure> {
        // RTLD_NODELETE: unloading a Swift library breaks the runtime's conformance caches.
        guard let handle = dlopen(request.libraryPath, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            return .failure(RunnerFailure(kind: .notALibrary, message: reason))
        }
        guard let symbol = dlsym(handle, BA_EXTENSION_DESCRIPTOR_SYMBOL) else {
            return .failure(
                RunnerFailure(
                    kind: .missingEntryPoint,
                    message: "\(request.libraryPath) does not export \(BA_EXTENSION_DESCRIPTOR_SYMBOL)"))
        }
        do {
            let descriptorSignature = try FFISignature(returning: cffi_type_pointer(), arguments: [])
            let raw = descriptorSignature.call(symbol, [])
            guard let descriptorAddress = UnsafeRawPointer(bitPattern: UInt(raw)) else {
                return .failure(
                    RunnerFailure(
                        kind: .missingEntryPoint, message: "\(BA_EXTENSION_DESCRIPTOR_SYMBOL)() returned NULL"))
            }
            let descriptor = try checkDescriptor(descriptorAddress)
            var wellFormed = true
            let identity = ExtensionIdentity(
                name: copyString(descriptor.name, min(descriptor.name_length, 256), wellFormed: &wellFormed),
                version: copyString(descriptor.version, min(descriptor.version_length, 256), wellFormed: &wellFormed),
                abiMajor: descriptor.abi_major, abiMinor: descriptor.abi_minor, entryPoints: entryPointMask(descriptor))
            channel.send(.identity(identity))
            let invocation = Invocation(channel: channel, request: request)
            let host = try HostTable(invocation: invocation)
            return .success(Loaded(descriptor: descriptor, identity: identity, invocation: invocation, host: host))
        } catch let failure as RunnerFailure {
            return .failure(failure)
        } catch {
            return .failure(RunnerFailure(kind: .invalidRequest, message: "libffi: \(error)"))
        }
    }

    /// One entry-point call of a loaded extension.
    static func call(
        _ event: RunnerEvent, _ loaded: Loaded, libraryPath: String
    ) -> Result<
        RunnerSummary, RunnerFailure
    > {
        let arena = CArena()
        do {
            let entryPoint = event.entryPoint
            if case .shouldDownload(let packs) = event {
                return try shouldDownload(packs, loaded, arena: arena)
            }
            guard let function = address(of: entryPoint, in: loaded.descriptor) else {
                let name = loaded.identity.name.isEmpty ? libraryPath : loaded.identity.name
                return .failure(
                    RunnerFailure(kind: .missingEntryPoint, message: "\(name) does not implement \(entryPoint.cName)"))
            }
            let invocation = loaded.invocation
            let context = UnsafeRawPointer(loaded.descriptor.context)
            let hostPointer = UnsafeRawPointer(loaded.host.table)
            invocation.beginCall(entryPoint)
            var disposition: Int32 = -1
            switch event {
            case .contentRequest(let kind, let manifestPath, let manifestURL, let remaining, let essentialRemaining):
                let info = arena.allocate(ba_content_request_info.self)
                info.pointee.struct_size = UInt32(MemoryLayout<ba_content_request_info>.size)
                info.pointee.request = kind
                (info.pointee.manifest_path, info.pointee.manifest_path_length) = arena.string(manifestPath)
                (info.pointee.manifest_url, info.pointee.manifest_url_length) = arena.string(manifestURL)
                info.pointee.restricted_download_size_remaining = remaining
                info.pointee.restricted_essential_download_size_remaining = essentialRemaining
                _ = try signature(pointers: 3).call(
                    function, [.pointer(context), .pointer(hostPointer), .pointer(info)])
            case .finished(let record, let path):
                let (pathPointer, pathLength) = arena.string(path)
                _ = try signature(pointers: 4, sizes: 1).call(
                    function,
                    [
                        .pointer(context), .pointer(hostPointer), .pointer(arena.download(record)),
                        .pointer(pathPointer), .uint64(UInt64(pathLength)),
                    ])
            case .failed(let record, let error):
                let info = arena.allocate(ba_error.self)
                info.pointee.struct_size = UInt32(MemoryLayout<ba_error>.size)
                info.pointee.code = error.code
                (info.pointee.domain, info.pointee.domain_length) = arena.string(error.domain)
                (info.pointee.message, info.pointee.message_length) = arena.string(error.message)
                _ = try signature(pointers: 4).call(
                    function,
                    [.pointer(context), .pointer(hostPointer), .pointer(arena.download(record)), .pointer(info)])
            case .challenge(let record, let challenge):
                let info = arena.allocate(ba_auth_challenge.self)
                info.pointee.struct_size = UInt32(MemoryLayout<ba_auth_challenge>.size)
                info.pointee.previous_failure_count = challenge.previousFailureCount
                (info.pointee.host_name, info.pointee.host_name_length) = arena.string(challenge.host)
                info.pointee.port = challenge.port
                (info.pointee.protocol, info.pointee.protocol_length) = arena.string(challenge.protocolName)
                (info.pointee.realm, info.pointee.realm_length) = arena.string(challenge.realm)
                (info.pointee.authentication_method, info.pointee.authentication_method_length) = arena.string(
                    challenge.authenticationMethod)
                let challengeSignature = try FFISignature(
                    returning: cffi_type_sint32(), arguments: Array(repeating: cffi_type_pointer(), count: 4))
                let raw = challengeSignature.call(
                    function,
                    [.pointer(context), .pointer(hostPointer), .pointer(arena.download(record)), .pointer(info)])
                disposition = Int32(truncatingIfNeeded: raw)
            case .willTerminate:
                _ = try signature(pointers: 2).call(function, [.pointer(context), .pointer(hostPointer)])
            case .shouldDownload:
                break  // answered above, by shouldDownload(_:_:arena:)
            }
            invocation.setPhase(.ended)
            return .success(
                RunnerSummary(
                    returnedCount: invocation.returnedCount, peakMemoryBytes: ba_sys_proc_status_bytes("VmHWM"),
                    challengeDisposition: disposition))
        } catch {
            return .failure(RunnerFailure(kind: .invalidRequest, message: "libffi: \(error)"))
        }
    }

    /// `should_download` once per pack, in order, then the answers (before the call's
    /// `finished`). An extension without the entry point (or with a 1.0 descriptor) is not
    /// called: every pack is a yes, the system default.
    static func shouldDownload(
        _ packs: [AssetPackRecord], _ loaded: Loaded, arena: CArena
    ) throws(FFIStatus) -> Result<RunnerSummary, RunnerFailure> {
        let invocation = loaded.invocation
        invocation.beginCall(.shouldDownload)
        var answers = [Bool](repeating: true, count: packs.count)
        if let function = address(of: .shouldDownload, in: loaded.descriptor) {
            let context = UnsafeRawPointer(loaded.descriptor.context)
            let hostPointer = UnsafeRawPointer(loaded.host.table)
            let signature = try FFISignature(
                returning: cffi_type_sint32(), arguments: Array(repeating: cffi_type_pointer(), count: 3))
            let pack = arena.allocate(ba_asset_pack.self)
            for (index, record) in packs.enumerated() {
                // A fresh struct for every pack: nothing the extension wrote into the last one
                // (it is const, but C) reaches the next.
                let callArena = CArena()
                pack.pointee = ba_asset_pack()
                pack.pointee.struct_size = UInt32(MemoryLayout<ba_asset_pack>.size)
                (pack.pointee.id, pack.pointee.id_length) = callArena.string(record.id)
                pack.pointee.version = record.version
                pack.pointee.download_size = record.downloadSize
                if let userInfo = record.userInfo {
                    (pack.pointee.user_info, pack.pointee.user_info_length) = callArena.string(
                        String(decoding: userInfo, as: UTF8.self))
                }
                let raw = signature.call(function, [.pointer(context), .pointer(hostPointer), .pointer(pack)])
                answers[index] = Int32(truncatingIfNeeded: raw) != 0
            }
        }
        invocation.setPhase(.ended)
        invocation.channel.send(.packDecisions(answers))
        return .success(
            RunnerSummary(
                returnedCount: invocation.returnedCount, peakMemoryBytes: ba_sys_proc_status_bytes("VmHWM")))
    }

    /// A void function taking `pointers` pointers then `sizes` size_t values.
    static func signature(pointers: Int, sizes: Int = 0) throws(FFIStatus) -> FFISignature {
        try FFISignature(
            returning: cffi_type_void(),
            arguments: Array(repeating: cffi_type_pointer(), count: pointers)
                + Array(repeating: cffi_type_uint64(), count: sizes))
    }

    /// The size of a 1.0 descriptor: everything before `should_download` (ABI 1.1).
    static let descriptorSize10 = MemoryLayout<ba_extension_desc>.offset(of: \.should_download)!

    /// Reads the version fields (which never move) before anything else, then the descriptor if
    /// the versions are ones this host speaks: as many bytes as its `struct_size` says (at least
    /// 1.0's), the fields it does not cover left NULL, so a 1.0 descriptor has no `should_download`.
    static func checkDescriptor(_ address: UnsafeRawPointer) throws(RunnerFailure) -> ba_extension_desc {
        let size = address.loadUnaligned(as: UInt32.self)
        let major = address.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        let minor = address.loadUnaligned(fromByteOffset: 6, as: UInt16.self)
        let ours = "\(BA_EXTENSION_ABI_MAJOR).\(BA_EXTENSION_ABI_MINOR)"
        guard major == BA_EXTENSION_ABI_MAJOR else {
            throw RunnerFailure(
                kind: .abiMismatch,
                message:
                    "the extension was built for C ABI \(major).\(minor); this host speaks \(ours): rebuild it against this host's ba_extension.h",
                foundMajor: major, foundMinor: minor)
        }
        guard minor <= BA_EXTENSION_ABI_MINOR else {
            throw RunnerFailure(
                kind: .abiMismatch,
                message: "the extension needs C ABI \(major).\(minor), newer than this host's \(ours): update the host",
                foundMajor: major, foundMinor: minor)
        }
        guard Int(size) >= descriptorSize10 else {
            throw RunnerFailure(
                kind: .abiMismatch,
                message:
                    "the descriptor's struct_size is \(size) bytes; C ABI \(major).0 needs at least \(descriptorSize10)",
                foundMajor: major, foundMinor: minor)
        }
        var descriptor = ba_extension_desc()
        withUnsafeMutableBytes(of: &descriptor) { target in
            target.copyMemory(
                from: UnsafeRawBufferPointer(
                    start: address, count: min(Int(size), MemoryLayout<ba_extension_desc>.size)))
        }
        return descriptor
    }

    static func address(of entryPoint: EntryPoint, in descriptor: ba_extension_desc) -> UnsafeRawPointer? {
        switch entryPoint {
        case .downloadsForRequest: unsafeBitCast(descriptor.downloads_for_request, to: UnsafeRawPointer?.self)
        case .downloadFinished: unsafeBitCast(descriptor.download_finished, to: UnsafeRawPointer?.self)
        case .downloadFailed: unsafeBitCast(descriptor.download_failed, to: UnsafeRawPointer?.self)
        case .downloadReceivedChallenge:
            unsafeBitCast(descriptor.download_received_challenge, to: UnsafeRawPointer?.self)
        case .extensionWillTerminate: unsafeBitCast(descriptor.extension_will_terminate, to: UnsafeRawPointer?.self)
        case .shouldDownload: unsafeBitCast(descriptor.should_download, to: UnsafeRawPointer?.self)
        }
    }

    static func entryPointMask(_ descriptor: ba_extension_desc) -> UInt32 {
        EntryPoint.allCases.reduce(0) { mask, entry in
            address(of: entry, in: descriptor) == nil ? mask : mask | (1 << UInt32(entry.rawValue))
        }
    }
}

extension RunnerFailure: Error {}
