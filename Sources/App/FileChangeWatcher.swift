import Core
import Platform
import Runtime
import Synchronization

/// Reloads when a file the daemon was configured with changes on disk (inotify), as SIGHUP does: the
/// status lists (credential-status-list) and the site policy (policy-file), one watcher each. The path
/// names a file (its directory is watched, for that name: an editor's or an installer's rename into place
/// counts) or a folder (every entry but hidden ones, which is where temporary files are written). A burst of
/// events (a copy of many files) settles for `settleMs` and then asks for one reload. A watch that
/// cannot be set up (the folder does not exist yet) or that ends (the folder removed) is logged and set
/// up again every `retryMs`; SIGHUP works meanwhile.
///
/// One thread, started and stopped with the daemon; `follow` changes the path after a reload.
final class FileChangeWatcher: Sendable {
    struct Target: Equatable, Sendable {
        let directory: String
        /// nil: every visible entry of the directory counts.
        let name: String?
        let path: String
    }

    private enum Message: Sendable { case follow(Target?) }

    private let logger: Logger
    /// What is watched, as the log's lines begin: "status lists", "site policy".
    private let label: String
    /// What changed, in the reload's reason: "status list", "site policy".
    private let noun: String
    private let threadName: String
    private let settleMs: Double
    private let retryMs: Double
    private let onChange: @Sendable (String) -> Void
    private let worker: PosixMutex<Worker<Message>?> = PosixMutex(nil)

    init(_ label: String, change noun: String, threadName: String, logger: Logger, settleMs: Double = 300, retryMs: Double = 5000, onChange: @escaping @Sendable (String) -> Void) {
        self.logger = logger
        self.label = label
        self.noun = noun
        self.threadName = threadName
        self.settleMs = settleMs
        self.retryMs = retryMs
        self.onChange = onChange
    }

    /// What to watch for `path` (nil: the option is not set, nothing is watched).
    static func target(for path: String?) -> Target? {
        guard let path, !path.isEmpty else { return nil }
        if Directory.isDirectory(path) { return Target(directory: path, name: nil, path: path) }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return Target(directory: directory, name: name, path: path)
    }

    /// Starts the thread on `path`. Throws when the thread cannot start.
    func start(path: String?) throws(SystemError) {
        let initial = Self.target(for: path)
        let t = try Worker<Message>(name: threadName, capacity: 4, overflow: .dropOldest, logger: logger, pollable: true) {
            [self] inbox in run(inbox, initial)
        }
        worker.withLock { $0 = t }
    }

    /// Watches `path` from now on (after a reload that may have changed the option).
    func follow(path: String?) {
        _ = worker.withLock { $0 }?.post(.follow(Self.target(for: path)))
    }

    func close(deadline: MonotonicInstant) {
        guard let t = worker.withLock({ $0 }) else { return }
        _ = t.stop(deadline: deadline)
    }

    private func run(_ inbox: WorkerInbox<Message>, _ initial: Target?) {
        var target = initial
        var watch: InotifyWatch?
        var retryAt: MonotonicInstant?
        var settleUntil: MonotonicInstant?
        var changed: [String] = []
        var saidMissing = false

        func open() {
            watch?.close()
            watch = nil
            retryAt = nil
            guard let target else { return }
            do throws(SystemError) {
                watch = try InotifyWatch(directory: target.directory)
                logger.info("\(label): watching \(target.name.map { "\(target.directory)/\($0)" } ?? target.directory + "/") for changes (inotify)")
                saidMissing = false
            } catch {
                if !saidMissing {
                    logger.warning("\(label): cannot watch \(target.directory) for changes: \(error); trying again every \(Int(retryMs / 1000)) s (SIGHUP reloads meanwhile)")
                    saidMissing = true
                }
                retryAt = MonotonicInstant.now().adding(milliseconds: retryMs)
            }
        }

        open()
        while !inbox.isStopping {
            let deadline = [settleUntil, retryAt].compactMap { $0 }.min()
            let outcome: PollOutcome
            do throws(SystemError) {
                outcome = try inbox.poll(watch.map { [PollRequest(fd: $0.fd, events: Int16(POLLIN))] } ?? [], until: deadline)
            } catch {
                logger.error("\(label): the watch thread cannot wait: \(error); changes are seen on SIGHUP only")
                break
            }
            while let message = inbox.take() {
                switch message {
                case .follow(let next) where next != target:
                    target = next
                    settleUntil = nil
                    changed = []
                    open()
                case .follow: break
                }
            }
            if let w = watch, outcome.revents.first.map({ $0 != 0 }) == true {
                let events: [InotifyWatch.Event]
                do throws(SystemError) {
                    events = try w.drain()
                } catch {
                    logger.error("\(label): \(error); watching again in \(Int(retryMs / 1000)) s")
                    w.close()
                    watch = nil
                    retryAt = MonotonicInstant.now().adding(milliseconds: retryMs)
                    continue
                }
                let relevant = events.filter { e in
                    e.mask & UInt32(IN_Q_OVERFLOW) != 0 || (!e.name.isEmpty && !e.name.hasPrefix(".")
                                                            && target?.name.map { e.name.bytesEqual($0) } ?? true)
                }
                for e in relevant {
                    let label = e.name.isEmpty ? "(events lost: anything may have changed)" : e.name
                    if !changed.contains(where: { $0.bytesEqual(label) }) { changed.append(label) }
                }
                if !relevant.isEmpty { settleUntil = MonotonicInstant.now().adding(milliseconds: settleMs) }
                if events.contains(where: \.watchEnded) {
                    logger.warning("\(label): \(w.directory) was removed or moved; watching again when it is back")
                    w.close()
                    watch = nil
                    saidMissing = true
                    retryAt = MonotonicInstant.now().adding(milliseconds: retryMs)
                }
            }
            let now = MonotonicInstant.now()
            if let until = settleUntil, now >= until, let target {
                settleUntil = nil
                let names = changed.prefix(5).map { Logger.escape($0) }.joined(separator: ", ") + (changed.count > 5 ? ", ..." : "")
                changed = []
                onChange("\(noun) change in \(target.directory) (\(names))")
            }
            if let at = retryAt, now >= at { open() }
        }
        watch?.close()
    }
}
