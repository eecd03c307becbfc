/**
 * The player page's script, inline and plain (ES2020, no build step of its own): it runs in the player's browser,
 * so it is a string here, not a module of the process. Kept free of template literals so that it can sit inside
 * one.
 *
 * The token never enters a URL: it comes from the fragment (`#token=…`, which browsers do not send, and which the
 * script removes from the address bar at once) or from a postMessage of an allowed origin, and it travels only in
 * the Authorization header. The events stream is read with fetch() rather than EventSource, which cannot send a
 * header. The page holds the token in memory only, and stops at its `exp`: it then says so and asks the platform
 * (postMessage `challenge-hooks-token-expired`) for a new one.
 */
export const PAGE_SCRIPT = String.raw`
(function () {
  'use strict'
  var config = JSON.parse(document.getElementById('page-config').textContent)
  var api = '/v1/instances/' + encodeURIComponent(config.definition)
  var $ = function (id) { return document.getElementById(id) }
  var token = null
  var expiryTimer = null
  var countdownTimer = null
  var retryTimer = null
  var stream = null
  var lastEventId = null
  var current = null
  var announced = ''
  var sessionWhy = 'Open this page from the challenge on your CTF platform.'

  var PHASES = {
    None: 'Requested', Pending: 'Starting', Running: 'Running', Error: 'Error', Deleted: 'Ended',
    Terminating: 'Stopping'
  }
  var STEPS = {
    Admitted: 'A slot of your budget', Scheduled: 'Placed on a node', ContainersStarted: 'Containers started',
    WorkloadReady: 'Ready inside', EndpointReady: 'Reachable from outside'
  }
  // Words for the reasons whose message is for the organisers; the others' messages say it to the player.
  var REASONS = {
    StartupTimeout: 'It did not start in time.', CrashLoopBackOff: 'It keeps crashing.',
    InvalidImage: 'Its image cannot be pulled.', ConfigError: 'The challenge is not set up right; tell the organisers.',
    IsolationNotEnforced: 'Its network isolation could not be put in place; tell the organisers.',
    PodRefused: 'The cluster refused to run it; tell the organisers.',
    DefinitionNotFound: 'The challenge no longer exists.',
    DefinitionInvalid: 'The challenge is not valid; tell the organisers.',
    OwnerBudgetExceeded: 'It costs more than your whole budget.'
  }
  var EXPIRED = 'Your session has expired. Reload this page from the CTF platform to go on.'

  function show(id, shown) { $(id).hidden = !shown }
  function say(id, text) { $(id).textContent = text }
  function notice(text) { say('notice', text || ''); show('notice', Boolean(text)) }

  function toParent(type) {
    if (window.parent === window) return
    config.origins.forEach(function (origin) { window.parent.postMessage({ type: type }, origin) })
  }

  function tokenExpiry(jwt) {
    try {
      var part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')
      var exp = JSON.parse(atob(part)).exp
      return typeof exp === 'number' ? exp * 1000 : null
    } catch (error) {
      return null
    }
  }

  function stopStream() {
    clearTimeout(retryTimer)
    if (stream !== null) stream.abort()
    stream = null
  }

  function expired(message) {
    token = null
    clearTimeout(expiryTimer)
    stopStream()
    sessionWhy = 'Your session has expired.'
    notice(EXPIRED)
    if (message) say('notice', EXPIRED + ' (' + message + ')')
    renderActions()
    announce(EXPIRED)
    toParent('challenge-hooks-token-expired')
  }

  function useToken(next) {
    token = next
    clearTimeout(expiryTimer)
    notice('')
    var at = tokenExpiry(next)
    if (at !== null) expiryTimer = setTimeout(function () { expired() }, Math.max(0, at - Date.now()))
    load()
  }

  function headers(extra) {
    var all = { authorization: 'Bearer ' + token }
    Object.keys(extra || {}).forEach(function (name) { all[name] = extra[name] })
    return all
  }

  // The one place a call of the API is made: the URL is the API's path, never anything of the token's.
  function call(method, path) {
    return fetch(api + path, { method: method, headers: headers(), cache: 'no-store', credentials: 'omit' })
      .then(function (answer) {
        return answer.json().catch(function () { return {} }).then(function (body) {
          return { status: answer.status, body: body }
        })
      })
  }

  function failed(answer) {
    if (answer.status === 401) return expired(answer.body.message)
    notice(answer.body.message || 'The gateway answered ' + answer.status + '.')
  }

  function load() {
    stopStream()
    say('phase', 'Loading')
    return call('GET', '').then(function (answer) {
      if (token === null) return
      if (answer.status === 200) {
        render(answer.body)
        openStream()
      } else if (answer.status === 404) render(null)
      else failed(answer)
    }, function () { notice('The gateway cannot be reached; try again in a moment.') })
  }

  function act(method, path) {
    if (token === null) return
    notice('')
    return call(method, path).then(function (answer) {
      if (answer.status >= 200 && answer.status < 300) {
        render(answer.body)
        if (stream === null) openStream()
      } else failed(answer)
    }, function () { notice('The gateway cannot be reached; try again in a moment.') })
  }

  // Server-Sent Events over fetch: blocks separated by a blank line; event:, id:, data: lines; ':' a comment.
  function openStream() {
    stopStream()
    var controller = new AbortController()
    stream = controller
    var extra = lastEventId === null ? {} : { 'last-event-id': lastEventId }
    var options = { headers: headers(extra), cache: 'no-store', credentials: 'omit', signal: controller.signal }
    fetch(api + '/events', options)
      .then(function (answer) {
        if (answer.status === 401) return answer.json().then(function (body) { expired(body.message) })
        if (answer.status === 404) return render(null)
        if (!answer.ok) throw new Error('events: ' + answer.status)
        var reader = answer.body.getReader()
        var decoder = new TextDecoder()
        var buffer = ''
        var pump = function () {
          return reader.read().then(function (chunk) {
            if (chunk.done) return
            buffer += decoder.decode(chunk.value, { stream: true })
            var blocks = buffer.split('\n\n')
            buffer = blocks.pop()
            blocks.forEach(dispatch)
            return pump()
          })
        }
        return pump().then(function () { reconnect(controller) })
      })
      .catch(function () { reconnect(controller) })
  }

  function reconnect(controller) {
    if (stream !== controller || controller.signal.aborted || token === null) return
    stream = null
    retryTimer = setTimeout(function () { if (token !== null && current !== null) openStream() }, 2000)
  }

  function dispatch(block) {
    var event = 'message'
    var data = ''
    var id = null
    block.split('\n').forEach(function (line) {
      if (line.indexOf('event: ') === 0) event = line.slice(7)
      else if (line.indexOf('data: ') === 0) data += line.slice(6)
      else if (line.indexOf('id: ') === 0) id = line.slice(4)
    })
    if (id !== null) lastEventId = id
    if (event === 'instance') render(JSON.parse(data))
    else if (event === 'deleted') { stopStream(); render(null) }
    else if (event === 'error') { stopStream(); notice(JSON.parse(data).message) }
  }

  function phaseTitle(view) {
    if (view === null) return 'No instance yet'
    if (view.phase === 'Pending' && view.reason === 'Queued') return 'Queued'
    return PHASES[view.phase] || view.phase
  }

  function detail(view) {
    if (view === null) return 'Start one when you are ready.'
    if (view.queuePosition !== undefined)
      return 'Position ' + view.queuePosition + ' in your queue: it starts when your budget has room.'
    var words = view.phase === 'Error' || view.phase === 'Deleted' ? REASONS[view.reason] : undefined
    var message = view.message || ''
    return words ? words + (message ? ' ' + message : '') : message
  }

  function announce(text) {
    if (text === announced) return
    announced = text
    say('announce', text)
  }

  function twoDigits(n) { return (n < 10 ? '0' : '') + n }
  function tick() {
    if (current === null || current.expiresAt === undefined || current.phase !== 'Running') return
    var left = Math.max(0, Math.floor((Date.parse(current.expiresAt) - Date.now()) / 1000))
    var hours = Math.floor(left / 3600)
    var minutes = Math.floor((left % 3600) / 60)
    var clock = (hours > 0 ? hours + ':' + twoDigits(minutes) : minutes) + ':' + twoDigits(left % 60)
    say('countdown', left === 0 ? 'Its time is up; it stops in a moment.' : 'Expires in ' + clock)
  }

  function render(view) {
    current = view
    var title = phaseTitle(view)
    say('phase', title)
    say('detail', detail(view))
    var steps = $('steps')
    steps.textContent = ''
    ;((view && view.steps) || []).forEach(function (step) {
      var item = document.createElement('li')
      item.className = step.done ? 'done' : 'waiting'
      item.textContent = (STEPS[step.step] || step.step) + (step.done ? ': done' : ': waiting')
      steps.appendChild(item)
    })
    show('steps', steps.childElementCount > 0)
    var running = view !== null && view.phase === 'Running' && view.command !== undefined
    show('connect', running)
    say('command', running ? view.command : '')
    say('copy', 'Copy')
    clearInterval(countdownTimer)
    say('countdown', '')
    if (running && view.expiresAt !== undefined) {
      tick()
      countdownTimer = setInterval(tick, 1000)
    }
    say('facts', view === null ? '' : 'Budget: ' + view.budget.held + ' of ' + view.budget.total +
      ' in use. Renewals: ' + view.renewals.applied + ' of ' + view.renewals.max + '.')
    renderActions()
    announce(title + '. ' + detail(view))
  }

  function renderActions() {
    var none = current === null
    var out = token === null
    setAction('start', none, out ? sessionWhy : undefined)
    ;['renew', 'restart', 'stop'].forEach(function (action) {
      var allowed = none ? { allowed: false } : current.actions[action]
      var why = out ? sessionWhy : allowed.allowed ? undefined : allowed.why
      setAction(action, !none, why)
    })
  }

  function setAction(action, shown, why) {
    show('action-' + action, shown)
    $(action).disabled = !shown || why !== undefined
    say('why-' + action, why || '')
  }

  $('start').addEventListener('click', function () { act('PUT', '') })
  $('renew').addEventListener('click', function () { act('POST', '/renew') })
  $('restart').addEventListener('click', function () { act('POST', '/restart') })
  $('stop').addEventListener('click', function () { act('POST', '/stop') })
  $('copy').addEventListener('click', function () {
    var text = $('command').textContent
    var copied = function () { say('copy', 'Copied') }
    var select = function () {
      var range = document.createRange()
      range.selectNodeContents($('command'))
      window.getSelection().removeAllRanges()
      window.getSelection().addRange(range)
      say('copy', 'Selected: press Ctrl+C')
    }
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(copied, select)
    else select()
  })

  window.addEventListener('message', function (event) {
    if (config.origins.indexOf(event.origin) < 0) return
    var data = event.data
    if (data && data.type === 'challenge-hooks-token' && typeof data.token === 'string') useToken(data.token)
  })

  var fragment = new URLSearchParams(location.hash.slice(1)).get('token')
  // Out of the address bar, the history and any screenshot at once; the fragment never reached a server.
  if (location.hash) history.replaceState(null, '', location.pathname)
  if (fragment) useToken(fragment)
  else {
    say('phase', 'Waiting for your session')
    say('detail', sessionWhy)
    renderActions()
  }
  toParent('challenge-hooks-ready')
})()
`
