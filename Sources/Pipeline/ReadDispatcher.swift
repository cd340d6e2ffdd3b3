import Core
import Platform

/// One read's walk after the debouncer, on the decode queue, once:
/// 1. the policies judge it (payload filters, signed passes); the first refusal ends the walk; then every
///    policy may conceal the payload (signed passes: a fingerprint in place of the token), so that no
///    output sees a token, whichever policy refused it;
/// 2. an accepted read is offered to each door output, which takes it or refuses it for itself alone;
/// 3. every report output (stdout, the journal, MQTT) gets the finished event, verdicts included;
/// 4. feedback plays for it (grant, deny or the read cue).
/// Nothing here waits: every output queues its own work.
public struct ReadDispatcher: Sendable {
    public let policies: [any ReadPolicy]
    public let doors: [any DoorOutput]
    public let reports: [any ReportOutput]
    public let feedback: (any ReadFeedback)?

    public init(policies: [any ReadPolicy] = [], doors: [any DoorOutput] = [], reports: [any ReportOutput] = [],
                feedback: (any ReadFeedback)? = nil) {
        self.policies = policies
        self.doors = doors
        self.reports = reports
        self.feedback = feedback
    }

    /// Judges and delivers `event`; returns it as the outputs saw it.
    @discardableResult
    public func dispatch(_ event: ReadEvent) -> ReadEvent {
        var event = event
        for policy in policies {
            policy.judge(&event)
            if !event.verdict.isAccepted { break }
        }
        for policy in policies { policy.conceal(&event) }
        if event.verdict.isAccepted {
            event.outputs = doors.map { OutputVerdict(output: $0.name, offer: $0.offer(event)) }
        }
        for report in reports { report.report(event) }
        feedback?.readJudged(event, doorOutputs: doors.count)
        return event
    }
}
