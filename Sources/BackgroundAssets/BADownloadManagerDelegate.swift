import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Receives the progress and results of an app's downloads. Every method is optional.
public protocol BADownloadManagerDelegate: AnyObject, Sendable {
    /// A download started (or resumed).
    func downloadDidBegin(_ download: BADownload)
    /// A download paused, e.g. before being promoted to the foreground.
    func downloadDidPause(_ download: BADownload)
    /// Bytes arrived.
    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64)
    /// The server asked for authentication.
    func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    /// A download failed.
    func download(_ download: BADownload, failedWithError error: any Error)
    /// A download finished; the file is deleted after this returns unless you move it.
    func download(_ download: BADownload, finishedWithFileURL fileURL: URL)
}

extension BADownloadManagerDelegate {
    public func downloadDidBegin(_ download: BADownload) {}
    public func downloadDidPause(_ download: BADownload) {}
    public func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {}
    public func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        (.performDefaultHandling, nil)
    }
    public func download(_ download: BADownload, failedWithError error: any Error) {}
    public func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {}
}
