import SystemPackage

/// An open file or folder of the pack layer (``PackFileSystem``): a swift-system
/// `FileDescriptor`, closed once, when the last reference goes.
///
/// A class, not the `FileDescriptor` itself, so that a descriptor kept in a table (the open
/// staging files) or handed from an opening call to its caller is never closed twice nor leaked:
/// nobody but `deinit` closes it.
final class Descriptor {
    /// The open descriptor; valid for as long as this object lives.
    let file: FileDescriptor

    /// Takes ownership of `file`.
    init(_ file: FileDescriptor) { self.file = file }

    // On Linux a close that fails has released the descriptor all the same (and must not be
    // retried on EINTR): there is nothing left to do with its error.
    deinit { try? file.close() }
}
