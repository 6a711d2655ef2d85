// As Apple's module does, `import BackgroundAssets` makes Foundation visible (URL, Data,
// FileManager, …); on Linux URLRequest and URLSession live in FoundationNetworking, so it comes too.
@_exported import Foundation
// Apple's asset-pack API takes and returns `FilePath` and `FileDescriptor` (Apple's `System`
// module); here they are swift-system's, visible through `import BackgroundAssets` alone.
@_exported import SystemPackage

#if canImport(FoundationNetworking)
    @_exported import FoundationNetworking
#endif
