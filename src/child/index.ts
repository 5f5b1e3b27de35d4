// src/child/index.ts — the public surface of the child wire protocol: connector, snapshot types, simulator.
export {
  ChildConnector,
  type ConnectorOptions,
  type PluginAction,
  type PostAction,
  type RegisterInput,
  type Registration,
  type SiteCredentials,
  type ThemeAction,
} from './connector.js';
export { ChildError, NO_MARKER_MESSAGE, type ChildFailureKind } from './child-error.js';
export { ChildUser, SecurityFinding, SiteChange, SitePlugin, SiteSnapshot, SiteTheme, SYNC_OUTDATED_DAYS } from './snapshot.js';
export { ChildPost, ChildPostFull, ChildUserProfile } from './replies.js';
export { ChildPostInput, ChildPostQuery, ChildUserQuery, ChildUserUpdate, NewChildUser } from './inputs.js';
export { startChildSim, type ChildSim, type ChildSimOptions, type SimFault, type SimSiteInfo } from './simulator/server.js';
export { childSimCommand } from './simulator/command.js';
export type { SimSiteState } from './simulator/state.js';
