internal import CBASystem

#if canImport(Glibc)
    import Glibc
#endif

/// The warm runner: `ba-extension-runner --zygote HOST_PID`, with its control socket as fd 3.
///
/// It loads `libBackgroundAssets.so` (and with it Foundation) from its own folder once, stays
/// single-threaded (fork without exec is only safe then: no Dispatch or concurrency threads exist
/// to leave a lock held), and forks one child per call, which goes on exactly as a spawned runner
/// would (``ExtensionRunner/runCall(_:)``): the jail, the sandbox, the memory cap before the
/// extension is loaded. A Swift extension then finds its runtime already mapped.
enum Zygote {
    static func serve(_ arguments: [String]) -> Never {
        guard arguments.count == 2, let host = pid_t(arguments[1]), host > 0 else {
            _exit(ExtensionRunner.ExitStatus.zygoteUnavailable.rawValue)
        }
        // Dies with the host (the thread that started it lives as long as the zygote).
        guard ba_sys_die_with_parent(host) == 0 else { _exit(ExtensionRunner.ExitStatus.zygoteUnavailable.rawValue) }
        preloadBackgroundAssets()
        guard ba_sys_thread_count() == 1 else { _exit(ExtensionRunner.ExitStatus.zygoteUnavailable.rawValue) }
        let status = ba_sys_zygote_serve(ExtensionRunner.protocolFD) { argc, argv in
            var arguments: [String] = []
            for index in 1..<Int(argc) {
                if let argument = argv?[index] { arguments.append(String(cString: argument)) }
            }
            ExtensionRunner.runCall(arguments)
        }
        _exit(status == 0 ? 0 : ExtensionRunner.ExitStatus.zygoteUnavailable.rawValue)
    }

    /// Loads the BackgroundAssets library of this installation (next to the executable in a
    /// build, in `../lib` when installed), if there is one; without it the zygote still saves the
    /// exec and the runner's own start.
    static func preloadBackgroundAssets() {
        for directory in Installation.libraryDirectories() {
            // RTLD_NODELETE as for extensions: a Swift library must never be unmapped.
            if dlopen(directory + "/libBackgroundAssets.so", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) != nil { return }
        }
    }
}
