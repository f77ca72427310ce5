// Review the workspace's uncommitted changes, as a script: one audit agent per dimension, every finding checked by an adversarial agent, confirmed issues sorted by severity. Args: {"dimensions": [...]} (optional).
// phases: Review, Verify
// ANCHOR: script
const SEVERITIES = ["critical", "high", "medium", "low"];
const FINDINGS = {
  type: "object",
  required: ["findings"],
  additionalProperties: false,
  properties: {
    findings: {
      type: "array",
      items: {
        type: "object",
        required: ["title", "severity", "file", "detail"],
        additionalProperties: false,
        properties: {
          title: { type: "string", minLength: 1 },
          severity: { enum: SEVERITIES },
          file: { type: "string" },
          detail: { type: "string" },
        },
      },
    },
  },
};
const VERDICT = {
  type: "object",
  required: ["isReal", "reason"],
  additionalProperties: false,
  properties: { isReal: { type: "boolean" }, reason: { type: "string" } },
};

let dimensions = ["correctness", "error handling", "security", "tests"];
if (args.dimensions !== undefined && args.dimensions !== null) {
  if (!Array.isArray(args.dimensions) || args.dimensions.length === 0) {
    throw new Error(`args.dimensions must be a non-empty list of strings, got ${JSON.stringify(args.dimensions)}`);
  }
  dimensions = args.dimensions.map((item) => {
    if (typeof item !== "string" || item.trim() === "") {
      throw new Error(`args.dimensions must be non-empty strings, got ${JSON.stringify(item)}`);
    }
    return item.trim();
  });
}

phase("Review");
const audit = async (_, name) => {
  const answer = await agent(
    `Review the uncommitted changes in this workspace for ${name} problems only. Start ` +
      "with `git status` and `git diff` (if the workspace is not a git repository, review " +
      "its source files). Report each real problem as a finding, with the file it is in " +
      "and the severity it deserves; report no finding rather than a guess.",
    { label: `audit:${name}`, schema: FINDINGS, phase: "Review" },
  );
  return { dimension: name, findings: answer.findings };
};
const verify = async ({ dimension, findings }) => {
  if (findings.length > 0) phase("Verify");
  const verdicts = await parallel(
    findings.map((finding, index) =>
      agent(
        `A reviewer reported this ${dimension} problem in the workspace's changes:\n` +
          `${JSON.stringify(finding, null, 2)}\nTry to prove it wrong: read the code it points ` +
          "at and check the claim. Answer isReal: true only if the problem is really there.",
        { label: `verify:${dimension}#${index + 1}`, schema: VERDICT, phase: "Verify" },
      ),
    ),
  );
  const confirmed = findings
    .map((finding, index) => ({ ...finding, dimension, reason: verdicts[index].reason, real: verdicts[index].isReal }))
    .filter((finding) => finding.real === true)
    .map(({ real, ...finding }) => finding);
  return { dimension, found: findings.length, confirmed };
};
const reviewed = await pipeline(dimensions, audit, verify);

const found = reviewed.reduce((sum, review) => sum + review.found, 0);
const rank = (severity) => {
  const at = SEVERITIES.indexOf(severity);
  return at < 0 ? SEVERITIES.length : at;
};
const order = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
// Worst first; ties in a fixed order, as the Rust sample sorts them.
const confirmed = reviewed
  .flatMap((review) => review.confirmed)
  .sort((a, b) => rank(a.severity) - rank(b.severity) || order(a.dimension, b.dimension) || order(a.title, b.title));
log(`${confirmed.length} of ${found} findings confirmed`);
return { dimensions, findings: found, confirmed };
// ANCHOR_END: script
