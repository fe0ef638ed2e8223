"""The conversations bench/fidelity.py compacts: segments of chat with planted items, each
with the token that must survive and a probe question that does not contain it."""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS = ("decision", "pending", "preference", "name", "number", "path", "resolved")

# (subject, choice): the choice is the planted token; the probe asks about the subject
DECISIONS = [
    ("message queue", "RabbitMQ"), ("ledger database", "CockroachDB"),
    ("frontend framework", "Svelte"), ("CI runner", "Buildkite"),
    ("feature flag service", "Unleash"), ("object storage", "MinIO"),
    ("identity provider", "Keycloak"), ("search backend", "Meilisearch"),
    ("metrics store", "VictoriaMetrics"), ("workflow engine", "Temporal"),
    ("mobile toolkit", "Flutter"), ("docs generator", "Docusaurus"),
]
DECISION_FORMS = [
    "After going back and forth, we picked {c} for the {s}.",
    "Let's go with {c} for the {s}.",
    "OK, final call: {c} for the {s}.",
    "We agreed to use {c} for the {s}.",
    "I talked it over with the team and we're going with {c} for the {s}.",
    "We settled on {c} as the {s}.",
    "Fine, {c} it is then for the {s}, we'll use it from Monday.",
]
# (task, token, hint for the probe)
TASKS = [
    ("write the runbook for the failover drill", "runbook", "failover drill"),
    ("migrate the billing tables to postgres 16", "billing", "database upgrade"),
    ("rotate the staging TLS certificates", "certificates", "staging security work"),
    ("add rate limiting to the webhook endpoint", "webhook", "abuse protection"),
    ("backfill the analytics events from March", "backfill", "missing analytics data"),
    ("upgrade the Helm chart for the gateway", "Helm", "gateway deployment"),
    ("translate the onboarding emails into Spanish", "Spanish", "onboarding emails"),
    ("archive the old Jenkins jobs", "Jenkins", "old CI cleanup"),
    ("set up disk usage alerts on the build agents", "disk", "build agent monitoring"),
    ("review the GDPR export flow", "GDPR", "privacy compliance"),
    ("benchmark the thumbnail service under load", "thumbnail", "image pipeline perf"),
    ("document the retry semantics of the SDK", "semantics", "SDK docs"),
]
TASK_FORMS = [
    "We still need to {t}.",
    "TODO: {t}.",
    "Next step is to {t}, probably this week.",
    "One thing left open: we need to {t}.",
    "Before the launch someone still needs to {t}.",
    "Remind me later that we need to {t}.",
]
RESOLVED = [
    ("clean up the unused S3 buckets", "buckets", "The unused S3 buckets are cleaned up, done."),
    ("fix the flaky login test", "flaky", "Fixed the flaky login test this morning."),
    ("renew the domain for the status page", "domain", "The status page domain is renewed, "
     "that's done."),
    ("merge the typo fixes in the docs", "typo", "The typo fixes in the docs are merged."),
    ("close the stale pull requests", "stale", "All the stale pull requests are closed now."),
    ("deploy the hotfix for the invoice totals", "hotfix", "The invoice totals hotfix is "
     "deployed."),
]
PREFERENCES = [
    ("I'd rather keep the public API in Elixir.", "Elixir",
     "Which language did I want for the public API?"),
    ("I prefer squash merges over rebases.", "squash", "How do I like pull requests merged?"),
    ("Please always write the changelog in British spelling.", "British",
     "Which spelling should the changelog use?"),
    ("For the logo accents I like teal.", "teal", "What colour did I want for the logo accents?"),
    ("I'm not a fan of ORMs, so plain SQL queries please.", "SQL",
     "How should database access be written?"),
    ("Keep the error messages short and under eighty characters.", "eighty",
     "How long may error messages be?"),
]
NAMES = [
    ("The warehouse dashboards belong to Priya from the data team.", "Priya",
     "Who owns the warehouse dashboards?"),
    ("Our on-call rotation lives in Opsgenie now.", "Opsgenie",
     "Where is the on-call rotation managed?"),
    ("Every change to the payment flow gets reviewed by Tomasz.", "Tomasz",
     "Who reviews the payment flow changes?"),
    ("After a week the logs are shipped to Loki.", "Loki", "Where do old logs go?"),
    ("Ask Mireille before touching the DNS records.", "Mireille",
     "Who should I ask before changing DNS?"),
    ("The search team is moving off Solr this quarter.", "Solr",
     "What is the search team moving away from?"),
    ("Contracts are signed through Ironclad.", "Ironclad", "What do we sign contracts with?"),
    ("The design system is maintained by Kwame.", "Kwame", "Who maintains the design system?"),
    ("Status updates go out through Statuspage.", "Statuspage",
     "How do status updates go out?"),
    ("Our hosting contract with Hetzner renews in June.", "Hetzner",
     "Which host's contract renews in June?"),
]
NUMBERS = [
    ("The session cookie expires after 45 minutes.", "45 minutes",
     "When does the session cookie expire?"),
    ("Each worker gets 768 MB of memory.", "768 MB", "How much memory does a worker get?"),
    ("We budgeted $1,200 a month for the GPUs.", "1,200", "What is the GPU budget?"),
    ("The public API listens on port 8443.", "8443", "Which port does the public API use?"),
    ("Image uploads are capped at 25 MB.", "25 MB", "What is the upload size limit?"),
    ("The nightly job retries 7 times before paging anyone.", "7 times",
     "How often does the nightly job retry?"),
    ("The cache keeps entries for 90 seconds.", "90 seconds", "How long are cache entries kept?"),
    ("The queue holds at most 5000 messages per tenant.", "5000",
     "How many messages may a tenant queue?"),
    ("The reports cluster runs 12 replicas.", "12 replicas", "How big is the reports cluster?"),
    ("The p99 latency target is 250 ms.", "250 ms", "What is the latency target?"),
]
PATHS = [
    ("The feature flags are defined in config/flags/rollout.yaml.", "config/flags/rollout.yaml",
     "Where are the feature flags defined?"),
    ("The migration script is scripts/db/migrate_v16.sh.", "scripts/db/migrate_v16.sh",
     "Which script runs the migration?"),
    ("Ops dashboards are at https://grafana.example.net/d/ops-overview.",
     "https://grafana.example.net/d/ops-overview", "Where are the ops dashboards?"),
    ("The rate limiter lives in services/gateway/ratelimit.go.",
     "services/gateway/ratelimit.go", "Where is the rate limiter code?"),
    ("Invoice fixtures go under tests/fixtures/invoices/.", "tests/fixtures/invoices",
     "Where do the invoice fixtures go?"),
    ("The deploy checklist is docs/runbooks/deploy.md.", "docs/runbooks/deploy.md",
     "Where is the deploy checklist?"),
    ("Secrets are read from /etc/acme/secrets.env on the hosts.", "/etc/acme/secrets.env",
     "Where are secrets read from on the hosts?"),
    ("The pricing logic sits in src/billing/pricing.py.", "src/billing/pricing.py",
     "Where is the pricing logic?"),
    ("Terraform for the VPC is in infra/network/vpc.tf.", "infra/network/vpc.tf",
     "Where is the VPC Terraform?"),
    ("Crash dumps land in /var/log/acme/crash/.", "/var/log/acme/crash",
     "Where do crash dumps land?"),
]
FILLER = [
    "How do I read a stack trace from a panic in a goroutine?",
    "Explain the difference between a mutex and a semaphore.",
    "What's a good name for a helper that retries with jitter?",
    "Can you sketch a SQL query that counts signups per week?",
    "Why would a TCP connection sit in TIME_WAIT for so long?",
    "Give me three ideas for the team offsite agenda.",
    "What does idempotent mean for an HTTP PUT?",
    "How should I structure commit messages for a monorepo?",
    "Is it worth caching DNS lookups inside the service?",
    "Summarize the pros and cons of server-side rendering.",
    "What is a sensible default for connection pool size?",
    "How do I explain eventual consistency to a product manager?",
    "Thanks, that helps.",
    "Hmm, interesting.",
]
DISTRACTORS = [
    "Should we also look at {alt} for the {s}?",
    "Someone suggested {alt} for the {s} but nobody liked it.",
]
ALTERNATIVES = ["Kafka", "MongoDB", "React", "GitLab", "LaunchDarkly", "Ceph", "Auth0",
                "Elasticsearch", "Prometheus", "Airflow", "ReactNative", "MkDocs"]


@dataclass(frozen=True)
class Plant:
    kind: str
    token: str
    question: str


@dataclass(frozen=True)
class Segment:
    lines: list[str]
    plants: list[Plant]


def conversation(rng: random.Random, segments: int) -> list[Segment]:
    """``segments`` segments, each with 2 decisions, 2 open tasks, 1 preference, 2 names,
    2 numbers, 2 paths and 1 task resolved later in it, among filler and distractors."""
    pools = {name: rng.sample(pool, len(pool)) for name, pool in (
        ("decision", DECISIONS), ("pending", TASKS), ("preference", PREFERENCES),
        ("name", NAMES), ("number", NUMBERS), ("path", PATHS), ("resolved", RESOLVED))}
    counts = {"decision": 2, "pending": 2, "preference": 1, "name": 2, "number": 2, "path": 2,
              "resolved": 1}
    out: list[Segment] = []
    for _ in range(segments):
        lines: list[str] = rng.sample(FILLER, 8)
        plants: list[Plant] = []
        later: list[str] = []
        for kind, count in counts.items():
            for _ in range(count):
                pool = pools[kind]
                if not pool:
                    continue
                item = pool.pop()
                if kind == "decision":
                    subject, choice = item
                    lines.append(rng.choice(DECISION_FORMS).format(c=choice, s=subject))
                    alt = rng.choice(ALTERNATIVES)
                    lines.append(rng.choice(DISTRACTORS).format(alt=alt, s=subject))
                    plants.append(Plant(kind, choice, f"What did we choose for the {subject}?"))
                elif kind == "pending":
                    task, token, hint = item
                    lines.append(rng.choice(TASK_FORMS).format(t=task))
                    plants.append(Plant(kind, token, f"What is still open about the {hint}?"))
                elif kind == "resolved":
                    task, token, done = item
                    lines.append(rng.choice(TASK_FORMS).format(t=task))
                    later.append(done)
                    plants.append(Plant(kind, token, ""))
                else:
                    text, token, question = item
                    lines.append(text)
                    plants.append(Plant(kind, token, question))
        rng.shuffle(lines)
        out.append(Segment(lines + later + [rng.choice(FILLER)], plants))
    return out
