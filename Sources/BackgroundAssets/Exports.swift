// As Apple's module does, `import BackgroundAssets` makes Foundation visible (URL, Data,
// FileManager, …); on Linux URLRequest and URLSession live in FoundationNetworking, so it comes too.
@_exported import Foundation

#if canImport(FoundationNetworking)
    @_exported import FoundationNetworking
#endif
