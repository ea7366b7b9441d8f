import { monotonicFactory } from 'ulid';
import { ID_PREFIXES } from '../../contract/common.js';

const ulid = monotonicFactory();

/** A prefixed, time-sortable id: `task_01J...`. */
export function newId(kind: keyof typeof ID_PREFIXES): string {
  return ID_PREFIXES[kind] + ulid();
}
