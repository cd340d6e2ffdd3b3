// The canary of Tests/Sanitizers/run thread: proves that the ThreadSanitizer run can see a race next to
// a lock body, and that a correctly locked counter (PosixMutex) gives no report.
//
//   sanitizer-canary race    one thread writes a plain class field inside withLock, another writes the
//                            same field outside any lock: TSan must report a data race
//   sanitizer-canary clean   four threads increment a PosixMutex-protected counter: no report, exact total
//
// Built only when SCANGATE_SANITIZER_CANARY=1 (Tests/Sanitizers/run sets it); not part of scangate.
#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform

/// A plain class field, shared on purpose without a lock in `race` mode.
final class Field: @unchecked Sendable {
    var value = 0
}

func fail(_ message: String) -> Never {
    print("sanitizer-canary: \(message)")
    exit(2)
}

/// Runs `body` on `count` threads and waits for all of them.
func onThreads(_ count: Int, _ name: String, _ body: @escaping @Sendable (Int) -> Void) {
    var threads: [PosixThread] = []
    for index in 0..<count {
        do {
            threads.append(try PosixThread(name: "\(name)-\(index)") { body(index) })
        } catch {
            fail("\(error)")
        }
    }
    for thread in threads { thread.join() }
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "race":
    let lock = PosixMutex(0)
    let field = Field()
    onThreads(2, "canary-race") { index in
        for _ in 0..<1000 {
            if index == 0 {
                lock.withLock { count in
                    count += 1
                    field.value += 1   // inside the lock body
                }
            } else {
                field.value += 1       // the same field, outside any lock: the race
            }
        }
    }
    print("sanitizer-canary race: done (field \(field.value)); ThreadSanitizer must have reported a data race")
case "clean":
    let threads = 4
    let rounds = 100_000
    let counter = PosixMutex(0)
    onThreads(threads, "canary-clean") { _ in
        for _ in 0..<rounds { counter.withLock { $0 += 1 } }
    }
    let total = counter.withLock { $0 }
    guard total == threads * rounds else { fail("clean: counter \(total), expected \(threads * rounds)") }
    print("sanitizer-canary clean: \(threads) threads x \(rounds) locked increments = \(total)")
default:
    fail("usage: sanitizer-canary race|clean")
}
