internal import CFFI

/// A libffi status other than `FFI_OK`, as a typed value.
struct FFIStatus: Error, CustomStringConvertible {
    var rawValue: UInt32
    var call: String
    var description: String { "\(call) failed with ffi_status \(rawValue)" }
}

/// One argument of a dynamic call, by libffi type.
enum FFIArgument {
    case pointer(UnsafeRawPointer?)
    case sint32(Int32)
    case uint64(UInt64)
    case sint64(Int64)

    var type: UnsafeMutablePointer<ffi_type> {
        switch self {
        case .pointer: cffi_type_pointer()
        case .sint32: cffi_type_sint32()
        case .uint64: cffi_type_uint64()
        case .sint64: cffi_type_sint64()
        }
    }
}

/// A prepared call interface whose storage lives as long as the value (libffi keeps pointers to
/// the argument-type array).
final class FFISignature {
    let cif: UnsafeMutablePointer<ffi_cif>
    private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>
    let argumentCount: Int

    init(returning: UnsafeMutablePointer<ffi_type>, arguments: [UnsafeMutablePointer<ffi_type>]) throws(FFIStatus) {
        cif = .allocate(capacity: 1)
        argumentCount = arguments.count
        argumentTypes = .allocate(capacity: max(arguments.count, 1))
        for (index, type) in arguments.enumerated() { (argumentTypes + index).initialize(to: type) }
        let status = ffi_prep_cif(cif, cffi_default_abi(), UInt32(arguments.count), returning, argumentTypes)
        guard status == FFI_OK else { throw FFIStatus(rawValue: status.rawValue, call: "ffi_prep_cif") }
    }

    deinit {
        cif.deallocate()
        argumentTypes.deallocate()
    }

    /// Calls `function` through `ffi_call`; returns the raw return register (at least an
    /// `ffi_arg`, as libffi requires for integral returns narrower than a register).
    func call(_ function: UnsafeRawPointer, _ arguments: [FFIArgument]) -> UInt64 {
        precondition(arguments.count == argumentCount, "argument count does not match the signature")
        let storage = UnsafeMutablePointer<UInt64>.allocate(capacity: max(arguments.count, 1))
        let pointers = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: max(arguments.count, 1))
        defer {
            storage.deallocate()
            pointers.deallocate()
        }
        for (index, argument) in arguments.enumerated() {
            let slot = UnsafeMutableRawPointer(storage + index)
            switch argument {
            case .pointer(let value): slot.storeBytes(of: value, as: UnsafeRawPointer?.self)
            case .sint32(let value): slot.storeBytes(of: value, as: Int32.self)
            case .uint64(let value): slot.storeBytes(of: value, as: UInt64.self)
            case .sint64(let value): slot.storeBytes(of: value, as: Int64.self)
            }
            pointers[index] = slot
        }
        var result: UInt64 = 0
        ffi_call(cif, unsafeBitCast(function, to: (@convention(c) () -> Void).self), &result, pointers)
        return result
    }
}

/// The handler libffi invokes for a closure: (cif, return slot, argument pointers, user data).
typealias FFIClosureHandler =
    @convention(c) (
        UnsafeMutablePointer<ffi_cif>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        UnsafeMutableRawPointer?
    ) -> Void

/// An executable function pointer made by libffi that calls `handler` with `userData`: how a host
/// function is bound to one invocation without any global state.
final class FFIClosure {
    let signature: FFISignature
    private let closure: UnsafeMutablePointer<ffi_closure>
    /// The executable address to hand to C.
    let code: UnsafeMutableRawPointer

    init(signature: FFISignature, handler: FFIClosureHandler, userData: UnsafeMutableRawPointer) throws(FFIStatus) {
        var code: UnsafeMutableRawPointer?
        guard let closure = cffi_closure_alloc(&code), let code else {
            throw FFIStatus(rawValue: UInt32(FFI_BAD_ABI.rawValue), call: "ffi_closure_alloc")
        }
        let status = ffi_prep_closure_loc(closure, signature.cif, handler, userData, code)
        guard status == FFI_OK else {
            ffi_closure_free(closure)
            throw FFIStatus(rawValue: status.rawValue, call: "ffi_prep_closure_loc")
        }
        self.signature = signature
        self.closure = closure
        self.code = code
    }

    deinit { ffi_closure_free(closure) }
}

/// Reads closure argument `index` as `T`.
@inline(__always)
func ffiArgument<T>(_ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ index: Int, as: T.Type) -> T {
    arguments![index]!.load(as: T.self)
}
