// ExtensionFoundation: an empty module, so that code written for Apple's systems compiles here
// unchanged.
//
// On Apple's systems, ExtensionFoundation is the framework of app extensions (`AppExtension`,
// `AppExtensionConfiguration`), and Apple's downloader-extension template and documentation
// snippets begin with `import ExtensionFoundation` next to `import BackgroundAssets`. Linux has
// no such framework, and nothing of it is needed here: a Background Assets extension is a shared
// library that the runner loads (docs/writing-an-extension-swift.md), and `BackgroundAssets`
// itself declares what the extension protocols need (`BADownloaderExtensionConfiguration`,
// `BADownloaderExtension.main()` for `@main`). So this module holds nothing: importing it is
// allowed and does nothing. See docs/apple-api-compatibility.md.
