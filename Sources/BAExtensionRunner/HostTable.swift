import BACore
import BAExtensionABI
internal import CBAExtension
internal import CFFI

/// Builds the `ba_host_api` table for one invocation: each function is a libffi closure whose
/// user data is the invocation, so host functions need no global state.
final class HostTable {
    /// The functions of the table, in table order.
    enum Function: Int, CaseIterable {
        case log, addDownload, scheduleDownload, cancelDownload, currentDownloads
        case acquireExclusiveControl, releaseExclusiveControl, useCredential, lastErrorMessage
    }

    /// A closure's user data: the invocation and which function it is.
    final class Binding {
        let invocation: Invocation
        let function: Function
        init(invocation: Invocation, function: Function) {
            self.invocation = invocation
            self.function = function
        }
    }

    let table: UnsafeMutablePointer<ba_host_api>
    private var closures: [FFIClosure] = []
    private var bindings: [Binding] = []

    init(invocation: Invocation) throws(FFIStatus) {
        table = .allocate(capacity: 1)
        var api = ba_host_api()
        api.struct_size = UInt32(MemoryLayout<ba_host_api>.size)
        api.abi_major = UInt16(BA_EXTENSION_ABI_MAJOR)
        api.abi_minor = UInt16(BA_EXTENSION_ABI_MINOR)
        for function in Function.allCases {
            let binding = Binding(invocation: invocation, function: function)
            bindings.append(binding)
            let closure = try FFIClosure(
                signature: try Self.signature(of: function), handler: hostFunctionHandler,
                userData: Unmanaged.passUnretained(binding).toOpaque())
            closures.append(closure)
            let code = closure.code
            switch function {
            case .log: api.log = bind(code, as: type(of: api.log))
            case .addDownload: api.add_download = bind(code, as: type(of: api.add_download))
            case .scheduleDownload: api.schedule_download = bind(code, as: type(of: api.schedule_download))
            case .cancelDownload: api.cancel_download = bind(code, as: type(of: api.cancel_download))
            case .currentDownloads: api.current_downloads = bind(code, as: type(of: api.current_downloads))
            case .acquireExclusiveControl:
                api.acquire_exclusive_control = bind(code, as: type(of: api.acquire_exclusive_control))
            case .releaseExclusiveControl:
                api.release_exclusive_control = bind(code, as: type(of: api.release_exclusive_control))
            case .useCredential: api.use_credential = bind(code, as: type(of: api.use_credential))
            case .lastErrorMessage: api.last_error_message = bind(code, as: type(of: api.last_error_message))
            }
        }
        table.initialize(to: api)
    }

    deinit { table.deallocate() }

    /// The closure's executable address as the table field's C function type.
    private func bind<F>(_ code: UnsafeMutableRawPointer, as: F?.Type) -> F? { unsafeBitCast(code, to: F.self) }

    private static func signature(of function: Function) throws(FFIStatus) -> FFISignature {
        let pointer = cffi_type_pointer()
        let size = cffi_type_uint64()  // size_t on LP64
        let status = cffi_type_sint32()
        switch function {
        case .log: return try FFISignature(returning: cffi_type_void(), arguments: [cffi_type_sint32(), pointer, size])
        case .addDownload, .scheduleDownload: return try FFISignature(returning: status, arguments: [pointer, pointer])
        case .cancelDownload: return try FFISignature(returning: status, arguments: [pointer, size, pointer])
        case .currentDownloads: return try FFISignature(returning: status, arguments: [pointer, pointer, pointer])
        case .acquireExclusiveControl:
            return try FFISignature(returning: status, arguments: [cffi_type_sint64(), pointer])
        case .releaseExclusiveControl: return try FFISignature(returning: status, arguments: [pointer])
        case .useCredential:
            return try FFISignature(returning: status, arguments: [pointer, size, pointer, size, pointer])
        case .lastErrorMessage: return try FFISignature(returning: pointer, arguments: [pointer])
        }
    }
}

/// The one handler behind every host-API closure. It only does bookkeeping and never traps on
/// what the extension passes: bad pointers with lengths become malformed records or errors.
private let hostFunctionHandler: FFIClosureHandler = { _, result, arguments, userData in
    guard let userData, let result else { return }
    let binding = Unmanaged<HostTable.Binding>.fromOpaque(userData).takeUnretainedValue()
    let invocation = binding.invocation
    /// Integral returns narrower than a register are written as a full ffi_arg (libffi's rule).
    func returnStatus(_ value: Int32) { result.storeBytes(of: Int64(value), as: Int64.self) }
    func string(_ pointerIndex: Int, _ lengthIndex: Int) -> String {
        var wellFormed = true
        let text = copyString(
            ffiArgument(arguments, pointerIndex, as: UnsafePointer<CChar>?.self),
            ffiArgument(arguments, lengthIndex, as: Int.self), wellFormed: &wellFormed)
        return text
    }
    typealias CodeOut = UnsafeMutablePointer<Int32>?
    switch binding.function {
    case .log:
        invocation.log(level: ffiArgument(arguments, 0, as: Int32.self), message: string(1, 2))
    case .addDownload:
        returnStatus(
            invocation.addDownload(
                ffiArgument(arguments, 0, as: UnsafePointer<ba_download>?.self),
                ffiArgument(arguments, 1, as: CodeOut.self)))
    case .scheduleDownload:
        returnStatus(
            invocation.scheduleDownload(
                ffiArgument(arguments, 0, as: UnsafePointer<ba_download>?.self),
                ffiArgument(arguments, 1, as: CodeOut.self)))
    case .cancelDownload:
        returnStatus(invocation.cancelDownload(string(0, 1), ffiArgument(arguments, 2, as: CodeOut.self)))
    case .currentDownloads:
        returnStatus(
            invocation.visitCurrentDownloads(
                ffiArgument(arguments, 0, as: ba_download_visitor?.self),
                ffiArgument(arguments, 1, as: UnsafeMutableRawPointer?.self),
                ffiArgument(arguments, 2, as: CodeOut.self)))
    case .acquireExclusiveControl:
        returnStatus(
            invocation.acquireExclusiveControl(
                timeoutMilliseconds: ffiArgument(arguments, 0, as: Int64.self),
                ffiArgument(arguments, 1, as: CodeOut.self)))
    case .releaseExclusiveControl:
        returnStatus(invocation.releaseExclusiveControl(ffiArgument(arguments, 0, as: CodeOut.self)))
    case .useCredential:
        returnStatus(
            invocation.useCredential(
                user: string(0, 1), password: string(2, 3), ffiArgument(arguments, 4, as: CodeOut.self)))
    case .lastErrorMessage:
        let message = invocation.lastErrorMessage(ffiArgument(arguments, 0, as: UnsafeMutablePointer<Int>?.self))
        result.storeBytes(of: message, as: UnsafePointer<CChar>?.self)
    }
}
