import type { Migration } from 'kysely/migration';
import * as initial from './001_initial.js';
import * as conversation from './002_conversation.js';
import * as delivery from './003_delivery.js';
import * as filesystems from './004_filesystems.js';
import * as hardening from './005_hardening.js';
import * as versionNumbers from './006_version_numbers.js';
import * as deliveryCompletion from './007_delivery_completion.js';
import * as wireDetails from './008_wire_details.js';
import * as streaming from './009_streaming.js';
import * as turnControl from './010_turn_control.js';
import * as secrets from './011_secrets.js';
import * as schedules from './012_schedules.js';
import * as traces from './014_traces.js';
import * as consoleSessions from './015_console_sessions.js';
import * as rollouts from './016_rollouts.js';
import * as rehearsals from './017_rehearsals.js';
import * as deliveryClaimOrder from './019_delivery_claim_order.js';
import * as stateHistory from './025_state_history.js';
import * as filesystemHistory from './026_filesystem_history.js';
import * as stateHistoryWriters from './027_state_history_writers.js';
import * as deliveryMigrateSource from './032_delivery_migrate_source.js';
import * as historyRetention from './033_history_retention.js';
import * as moveSetsMovedAt from './039_move_sets_moved_at.js';
import * as deliveryTaskCascade from './040_delivery_task_cascade.js';
import * as stateHistoryBeforeMove from './041_state_history_before_move.js';
import * as migrateHooksOnTask from './046_migrate_hooks_on_task.js';
import * as deliveryVersionKey from './047_delivery_version_key.js';

/**
 * Every schema change, by name; applied in name order by Kysely's Migrator (store/db.ts), once
 * each. Listed here rather than read from the directory: the server runs from a bundle (dist/),
 * where these files do not exist. A new change is a new file `NNN_what.ts` exporting its SQL as
 * `script` and `up(db)` running it (a new PGlite directory is created from the scripts alone),
 * plus its line here; a change that has been applied anywhere is never edited.
 */
export const schemaChanges: Record<string, Migration & { script: string }> = {
  '001_initial': initial,
  '002_conversation': conversation,
  '003_delivery': delivery,
  '004_filesystems': filesystems,
  '005_hardening': hardening,
  '006_version_numbers': versionNumbers,
  '007_delivery_completion': deliveryCompletion,
  '008_wire_details': wireDetails,
  '009_streaming': streaming,
  '010_turn_control': turnControl,
  '011_secrets': secrets,
  '012_schedules': schedules,
  '014_traces': traces,
  '015_console_sessions': consoleSessions,
  '016_rollouts': rollouts,
  '017_rehearsals': rehearsals,
  '019_delivery_claim_order': deliveryClaimOrder,
  '025_state_history': stateHistory,
  '026_filesystem_history': filesystemHistory,
  '027_state_history_writers': stateHistoryWriters,
  '032_delivery_migrate_source': deliveryMigrateSource,
  '033_history_retention': historyRetention,
  '039_move_sets_moved_at': moveSetsMovedAt,
  '040_delivery_task_cascade': deliveryTaskCascade,
  '041_state_history_before_move': stateHistoryBeforeMove,
  '046_migrate_hooks_on_task': migrateHooksOnTask,
  '047_delivery_version_key': deliveryVersionKey,
};
