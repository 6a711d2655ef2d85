import BACore
internal import CFFI

#if canImport(Glibc)
    import Glibc
#endif

/// Reads the protocol socket while the entry point runs, and calls the extension's
/// `extension_will_terminate` when the host says the deadline is near. The host kills the
/// process at the deadline whatever happens here.
enum TerminationWatcher {
    /// What the watcher thread needs; handed over as its one argument.
    final class Context {
        let channel: Channel
        var decoder: FrameDecoder
        let function: UnsafeRawPointer
        let context: UnsafeRawPointer?
        let host: UnsafeRawPointer

        init(
            channel: Channel, decoder: FrameDecoder, function: UnsafeRawPointer, context: UnsafeRawPointer?,
            host: UnsafeRawPointer
        ) {
            self.channel = channel
            self.decoder = decoder
            self.function = function
            self.context = context
            self.host = host
        }
    }

    static func start(
        channel: Channel, decoder: FrameDecoder, function: UnsafeRawPointer, context: UnsafeRawPointer?,
        host: UnsafeRawPointer
    ) {
        let argument = Unmanaged.passRetained(
            Context(channel: channel, decoder: decoder, function: function, context: context, host: host)
        ).toOpaque()
        var thread = pthread_t()
        // A detached thread: the process exits (or is killed) without joining it.
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        _ = pthread_create(&thread, &attributes, watch, argument)
        pthread_attr_destroy(&attributes)
    }
}

private func watch(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    let context = Unmanaged<TerminationWatcher.Context>.fromOpaque(argument).takeRetainedValue()
    while true {
        guard let frame = try? context.channel.receive(decoder: &context.decoder) else { return nil }
        guard case .terminate = try? HostMessage.decode(frame) else { continue }
        guard
            let signature = try? FFISignature(
                returning: cffi_type_void(), arguments: [cffi_type_pointer(), cffi_type_pointer()])
        else { return nil }
        _ = signature.call(context.function, [.pointer(context.context), .pointer(context.host)])
        return nil
    }
}
