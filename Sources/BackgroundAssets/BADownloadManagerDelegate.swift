import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Receives the progress and results of an app's downloads. Every method is optional.
///
/// As in Apple's declaration the protocol is not `Sendable`: a delegate may be any class (a
/// non-final one with mutable state, too). The manager holds it weakly and calls it only from its
/// one delivery thread, one callback at a time.
public protocol BADownloadManagerDelegate: AnyObject {
    /// A download started (or resumed).
    func downloadDidBegin(_ download: BADownload)
    /// A download paused, e.g. before being promoted to the foreground.
    func downloadDidPause(_ download: BADownload)
    /// Bytes arrived.
    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64)
    /// The server asked for authentication. Implement this or the completion-handler form (on
    /// Apple's system both are one Objective-C method); the manager calls this one, whose
    /// default calls the completion-handler form.
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    /// The completion-handler form of ``download(_:didReceive:)-(_,_)``; the default answers
    /// `.performDefaultHandling`.
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
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
    public func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        let answer = await withCheckedContinuation { continuation in
            self.download(download, didReceive: challenge) { disposition, credential in
                continuation.resume(returning: UncheckedBox((disposition, credential)))
            }
        }
        return answer.value
    }
    public func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }
    public func download(_ download: BADownload, failedWithError error: any Error) {}
    public func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {}
}
