/**
 * The `validate` table for people: one row per error, then per warning, and what the running
 * components report in their ConfigurationStates.
 */
import { reportedSummary } from '../core/explain/reported.ts';
import { rejectedByText, type ValidationFinding, type ValidationReport } from '../core/explain/validate.ts';
import { palette } from './color.ts';
import { renderTable } from './table.ts';

/**
 * The table for people: SEVERITY OBJECT MESSAGE REJECTED-BY (who rejects the configuration
 * because of an error; empty for warnings); wide: also FIX and SOURCE, and complete node lists.
 */
export function validationTable(report: ValidationReport, wide: boolean, color = palette()): string {
  const findings = [...report.errors, ...report.warnings];
  const summary = reportedSummary(report.reported, (xs) => (wide || xs.length <= 8 ? xs.join(', ') : `${xs.slice(0, 8).join(', ')} and ${xs.length - 8} more`));
  const states = summary ? `\nConfigurationState (what the running components report): ${summary}\n` : '';
  if (findings.length === 0) return `No errors or warnings.\n${states}`;
  const sev = (s: ValidationFinding['severity']) => (s === 'error' ? color.red(s) : color.yellow(s));
  const columns = ['SEVERITY', 'OBJECT', 'MESSAGE', { header: 'REJECTED-BY', placeholder: '' }, ...(wide ? ['FIX', 'SOURCE'] : [])];
  const rows = findings.map((f) => {
    const by = f.rejectedBy ? rejectedByText(f.rejectedBy, wide ? Infinity : 5) : '';
    const base = [sev(f.severity), f.object, f.message, by];
    return wide ? [...base, f.fix, f.source] : base;
  });
  return renderTable(columns, rows) + states;
}
