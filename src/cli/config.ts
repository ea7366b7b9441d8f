import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type Conf from 'conf';
import envPaths from 'env-paths';

import { DEFAULT_BASE_URL } from '../contract/enums.js';
export { DEFAULT_BASE_URL };
export const DEFAULT_PROFILE = 'default';
/** The profile `agentctl server start` writes its bootstrap key into. */
export const LOCAL_PROFILE = 'local';

export interface Profile {
  base_url?: string;
  api_key?: string;
}

export interface ConfigData {
  current_profile?: string;
  profiles: Record<string, Profile>;
}

export type Env = Record<string, string | undefined>;

/** Where the config file lives: AGENTCTL_CONFIG_DIR, else the XDG config directory. */
export function configDir(env: Env): string {
  if (env.AGENTCTL_CONFIG_DIR) return path.resolve(env.AGENTCTL_CONFIG_DIR);
  if (env.XDG_CONFIG_HOME) return path.join(env.XDG_CONFIG_HOME, 'agentctl');
  return envPaths('agentctl', { suffix: '' }).config;
}

/** Where the embedded server keeps its data: AGENTCTL_DATA_DIR, else the user's data directory. */
export function dataDir(env: Env): string {
  if (env.AGENTCTL_DATA_DIR) return path.resolve(env.AGENTCTL_DATA_DIR);
  if (env.XDG_DATA_HOME) return path.join(env.XDG_DATA_HOME, 'agentctl');
  return envPaths('agentctl', { suffix: '' }).data;
}

const FILE_MODE = 0o600;

/**
 * The profiles (one base URL and key each) in a conf store, file mode 0600. Reads parse the file
 * directly; conf (with its schema validator, ~10 ms to load) is loaded only to write, so commands
 * that merely use a profile start faster.
 */
export class ConfigStore {
  private data: ConfigData;
  private conf?: Conf<ConfigData>;
  readonly path: string;
  /** Set when the file was readable by others and had to be tightened. */
  readonly repairedMode?: number;

  constructor(readonly dir: string) {
    this.path = path.join(dir, 'config.json');
    let repaired: number | undefined;
    let data: ConfigData = { profiles: {} };
    if (existsSync(this.path)) {
      const mode = statSync(this.path).mode & 0o777;
      if (mode !== FILE_MODE) {
        chmodSync(this.path, FILE_MODE);
        repaired = mode;
      }
      try {
        data = { profiles: {}, ...(JSON.parse(readFileSync(this.path, 'utf8')) as Partial<ConfigData>) };
      } catch {
        // conf refuses a corrupt file too; surface that when writing, and read it as empty.
      }
    }
    this.repairedMode = repaired;
    this.data = data;
  }

  get currentProfile(): string | undefined {
    return this.data.current_profile;
  }

  profiles(): Record<string, Profile> {
    return this.data.profiles ?? {};
  }

  profile(name: string): Profile | undefined {
    return this.profiles()[name];
  }

  async setCurrentProfile(name: string): Promise<void> {
    (await this.writer()).set('current_profile', name);
    this.data = { ...this.data, current_profile: name };
  }

  /** Sets fields of a profile (creating it); `undefined` removes a field. */
  async updateProfile(name: string, fields: Partial<Profile>): Promise<Profile> {
    const next: Profile = { ...this.profiles()[name] };
    for (const [field, value] of Object.entries(fields) as [keyof Profile, string | undefined][]) {
      if (value === undefined) delete next[field];
      else next[field] = value;
    }
    const profiles = { ...this.profiles(), [name]: next };
    (await this.writer()).set('profiles', profiles);
    this.data = { ...this.data, profiles };
    return next;
  }

  private async writer(): Promise<Conf<ConfigData>> {
    if (!this.conf) {
      const { default: ConfClass } = await import('conf');
      this.conf = new ConfClass<ConfigData>({
        projectName: 'agentctl',
        projectSuffix: '',
        cwd: this.dir,
        configName: 'config',
        configFileMode: FILE_MODE,
        defaults: { profiles: {} },
      });
    }
    return this.conf;
  }
}

export type Source = 'flag' | 'env' | 'profile' | 'default';

export interface Credentials {
  profile: string;
  profileSource: Exclude<Source, 'profile'> | 'config';
  baseUrl: string;
  baseUrlSource: Source;
  apiKey?: string;
  apiKeySource?: Exclude<Source, 'default'>;
  /** Environment variables that override a value the profile holds. */
  envOverrides: string[];
}

export interface CredentialFlags {
  profile?: string;
  baseUrl?: string;
  apiKey?: string;
}

/** Precedence: flag > environment > profile (> the default base URL). */
export function resolveCredentials(flags: CredentialFlags, env: Env, store: ConfigStore): Credentials {
  const [profile, profileSource] = flags.profile
    ? [flags.profile, 'flag' as const]
    : env.AGENTCTL_PROFILE
      ? [env.AGENTCTL_PROFILE, 'env' as const]
      : store.currentProfile
        ? [store.currentProfile, 'config' as const]
        : [DEFAULT_PROFILE, 'default' as const];
  const saved = store.profile(profile) ?? {};
  const envOverrides: string[] = [];
  if (!flags.baseUrl && env.AGENTCTL_BASE_URL && saved.base_url && env.AGENTCTL_BASE_URL !== saved.base_url) envOverrides.push('AGENTCTL_BASE_URL');
  if (!flags.apiKey && env.AGENTCTL_API_KEY && saved.api_key && env.AGENTCTL_API_KEY !== saved.api_key) envOverrides.push('AGENTCTL_API_KEY');

  const pick = <T extends string>(flag: T | undefined, fromEnv: T | undefined, fromProfile: T | undefined) =>
    flag ? ([flag, 'flag'] as const) : fromEnv ? ([fromEnv, 'env'] as const) : fromProfile ? ([fromProfile, 'profile'] as const) : undefined;
  const base = pick(flags.baseUrl, env.AGENTCTL_BASE_URL, saved.base_url);
  const key = pick(flags.apiKey, env.AGENTCTL_API_KEY, saved.api_key);
  return {
    profile,
    profileSource,
    baseUrl: base?.[0] ?? DEFAULT_BASE_URL,
    baseUrlSource: base?.[1] ?? 'default',
    apiKey: key?.[0],
    apiKeySource: key?.[1],
    envOverrides,
  };
}
