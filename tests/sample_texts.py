"""The article texts of the bundled sample WARC, written for warcplex (see make_sample_warc.py).

Each article: (slug, language, site, layout, title, body, comments). ``body`` holds
paragraphs separated by blank lines. All text here is original to this project.
"""

from __future__ import annotations

ARTICLES: list[tuple[str, str, str, str, str, str, tuple[str, ...]]] = [
    ("old-mill-bridge", "en", "ashford-gazette.example", "article",
     "The Old Mill Bridge: three centuries over the River Wend",
     """The stone bridge that carries Mill Lane over the River Wend is older than most people in Ashford realise. Parish records show that a wooden footbridge stood on the site as early as 1690, when farmers from the eastern fields needed a way to bring grain to the mill without wading across at the ford.

The present bridge was built in 1784 after a winter flood swept the timber structure away. The work was paid for by a subscription among the mill owner, two local landowners and the vicar, whose names are still carved on a worn stone set into the northern parapet. Three arches of local sandstone were chosen because the quarry lay only a mile upstream, and the blocks could be floated down on rafts.

For more than a century the bridge carried carts, cattle and the occasional stagecoach. When the railway arrived in 1862, traffic shifted to the new road by the station, and the bridge became a quiet crossing used mainly by walkers and children on their way to school. Photographs from the 1920s show boys fishing from the central arch, a habit the town council tried and failed to discourage.

The bridge was listed as a historic structure in 1971. A careful restoration in 2009 replaced crumbling mortar with lime, cleared ivy from the arches and repaired the cutwaters that protect the piers from debris. Today it is one of the best places in town to watch herons hunting in the shallows, and the heritage society leads a free walk across it on the first Sunday of every month.""",
     ("My grandmother used to tell us about skating under the arches when the river froze in 1947.",
      "Great article. Is the carved stone with the names still readable?")),

    ("red-lentil-soup", "en", "homekitchen.example", "main",
     "Red lentil soup with lemon and cumin",
     """This is the soup I make on Monday evenings when the fridge is nearly empty and nobody wants to cook. It needs only a handful of cupboard ingredients, it is ready in about thirty minutes, and it tastes even better the next day.

Start by warming two tablespoons of olive oil in a heavy pot over medium heat. Add one chopped onion, two chopped carrots and a pinch of salt, and cook gently for eight to ten minutes until the onion is soft and golden. Stir in two crushed garlic cloves and a teaspoon of ground cumin and cook for one more minute, until the kitchen smells wonderful.

Rinse two hundred grams of red lentils under cold water and add them to the pot with a litre of vegetable stock. Bring everything to a boil, then lower the heat and let it simmer for about twenty minutes, stirring now and then so the lentils do not stick to the bottom. They will break down and thicken the soup on their own.

When the lentils are completely soft, blend about half of the soup with a hand blender, leaving the rest chunky. Squeeze in the juice of half a lemon, taste, and add more salt or pepper if it needs it. Serve with warm flatbread and a spoonful of yogurt on top.""",
     ("I added a tin of tomatoes and it was lovely.", "Can I freeze this? It looks perfect for batch cooking.")),

    ("kettle-review", "en", "gadgetbench.example", "divs",
     "Review: the Brightway 1.7 litre kettle after six months",
     """Cheap kettles have a reputation for lasting about as long as a carton of milk, so I did not expect much from the Brightway when I bought it for the office kitchen. Six months and several thousand cups of tea later, it is still going, and it has earned a proper review.

The design is plain but practical. The body is brushed steel with a plastic handle that stays cool, and the water window on the side is large enough to read from across the room. The lid opens with a button and springs back fully, which makes filling it from a low tap easy. It sits on a round base, so left-handed colleagues can pick it up from any angle.

Boiling a full litre takes just under three minutes in my tests, which is about average for a kettle of this size. It is not quiet, though: the last thirty seconds sound like a small aircraft taking off. The automatic switch has never failed, and the boil-dry protection cut in correctly the one time someone switched it on empty.

There are a few downsides. The limescale filter is fiddly to remove and clean, and the steel body shows every fingerprint. Still, for the price of two sandwiches it does its job reliably, and I would buy it again.""",
     ("Ours started leaking at the base after a year, so maybe we were unlucky.",)),

    ("library-reopens", "en", "ashford-gazette.example", "article",
     "Town library reopens after eighteen months of renovation",
     """Ashford's public library reopened its doors on Saturday morning after a renovation that took six months longer than planned. A queue of more than a hundred people, many of them children clutching overdue books, had formed outside before the mayor cut the ribbon at ten o'clock.

The building now has a lift to the first floor, new heating, and a bright reading room where the old storage area used to be. The children's section has doubled in size and includes a small stage for story time. Twelve computers are available for free use, and the printing charges have been cut to five pence a page.

Head librarian Margaret Osei said the delay was caused by damp in the east wall, which had to be dried out and rebuilt before any new plaster could go on. She thanked readers for their patience and said that all fines for books borrowed before the closure would be cancelled.

Opening hours will be extended to eight o'clock on Tuesdays and Thursdays from next month. Volunteers are still needed for the homework club and the weekly conversation group for adults learning English.""",
     ()),

    ("porthaven-diary", "en", "slowtravels.example", "main",
     "Two rainy days in Porthaven, and why I would go back",
     """We arrived in Porthaven on the late bus, in a downpour that made the harbour lights look like watercolours. The guesthouse owner met us at the door with towels and a pot of tea, and told us not to worry, because the forecast for tomorrow was only slightly less wet.

In the morning we walked along the sea wall to the lighthouse. The wind was strong enough to lean on, and the waves threw spray over the railings every few minutes. A fisherman mending nets under a shelter explained that the boats had stayed in for three days and would probably stay in for two more. He recommended the fish stew at the café by the slipway, and he was right.

The afternoon belonged to the small museum above the post office. It holds ship models, old photographs of the pilchard fleet and a wonderful collection of letters written by a lighthouse keeper's wife in the 1890s. We spent two hours there and were the only visitors.

On our last day the rain finally stopped at sunset, and the whole bay turned gold for about ten minutes. Everybody in the pub came outside to watch. I cannot promise good weather, but I can promise that Porthaven is worth the journey.""",
     ("We stayed at the same guesthouse last spring. Lovely people!",)),

    ("repotting-houseplants", "en", "greenthumb.example", "divs",
     "How to repot a houseplant without killing it",
     """Most houseplants need a bigger pot every year or two. If roots are growing out of the drainage holes, or water runs straight through the pot without soaking in, it is time to move your plant to a new home.

Choose a pot only a few centimetres wider than the old one. A pot that is much too large holds more wet soil than the roots can use, and that is the most common cause of root rot. Make sure the new pot has a drainage hole, and have fresh potting mix ready before you start.

Water the plant a day before repotting so the root ball holds together. Turn the old pot on its side, support the base of the stems with one hand and gently slide the plant out. If the roots are circling tightly, tease a few of them loose with your fingers.

Put a layer of fresh mix in the new pot, set the plant at the same depth as before and fill the gaps around it, pressing lightly. Water thoroughly and keep the plant out of strong sun for a week while it settles. Do not feed it for about a month, because the new soil already contains enough nutrients.""",
     ()),

    ("dripping-tap", "en", "fixitdaily.example", "table",
     "Fixing a dripping tap in twenty minutes",
     """A tap that drips once a second wastes thousands of litres of water a year, and the fix usually costs less than a coffee. In most older compression taps the culprit is a worn rubber washer at the bottom of the valve.

First turn off the water supply to the tap. There is usually a small isolating valve on the pipe under the sink; turn its slot a quarter turn with a screwdriver. Then open the tap fully to let the remaining water drain out, and put the plug in the sink so that no small parts disappear down the drain.

Prise off the decorative cap on top of the handle, undo the screw beneath it and lift the handle away. Use an adjustable spanner to unscrew the valve body, holding the tap steady with your other hand. The washer sits at the bottom, held by a small nut or simply pressed on.

Fit a new washer of the same size, reassemble everything in reverse order and turn the water back on slowly. If the tap still drips, the valve seat may be scratched, and a plumber can regrind it or replace the cartridge.""",
     ("Worked first time, thank you. The isolating valve was stuck though.",)),

    ("community-garden", "en", "riverside-news.example", "article",
     "Volunteers turn empty car park into a community garden",
     """A patch of cracked tarmac behind the old bus depot has become one of the greenest corners of the Riverside estate. Over three summer weekends, about forty volunteers built raised beds, laid gravel paths and planted vegetables, herbs and a row of young apple trees.

The idea came from two neighbours, Priya Nair and Tom Wallace, who noticed that many families on the estate had no garden of their own. They wrote to the housing association, which owns the land, and were granted a five year lease for a nominal rent of one pound.

Local businesses donated timber, compost and tools, and a nearby school has adopted two of the beds for its science lessons. The first harvest of beans and courgettes was shared out at a picnic last Sunday, with plenty left over for the food bank.

The group meets every Wednesday evening and Saturday morning. No experience is needed, and gloves are provided for anyone who wants to help.""",
     ("This is exactly what the estate needed.", "Are there still beds available for families?")),

    ("backpack-review", "en", "trailnotes.example", "main",
     "Long-term test: a 35 litre hiking backpack",
     """I carried this pack on every walk last year, from short afternoon loops to a four day crossing of the hills with a tent and stove. A year is long enough to find out what really matters in a backpack, and what was only nice on the shop shelf.

The fit is the best thing about it. The back length adjusts with a simple strap, and the hip belt carries most of the weight, so my shoulders never ached even with twelve kilograms inside. The mesh back panel keeps a gap between the pack and your shirt, which helps a lot on warm climbs.

Storage is sensible rather than clever. There is one main compartment, a lid pocket for maps and snacks, two side pockets that hold a water bottle each, and a stretchy front pocket that swallows a wet jacket. I never missed the extra zips that some competitors add.

After a year the fabric shows some scuffs, but all the seams and buckles are intact. The included rain cover is thin and flaps in strong wind, so I would pack a proper liner bag as well. Overall it is comfortable, tough and good value.""",
     ()),

    ("sourdough-pancakes", "en", "homekitchen.example", "main",
     "Sourdough discard pancakes for lazy weekends",
     """Anyone who bakes sourdough knows the guilt of pouring discarded starter down the sink. These pancakes use a whole cup of it, and they come out light, slightly tangy and golden at the edges.

In a large bowl, mix two hundred grams of discard with one egg, a tablespoon of sugar, a pinch of salt and a tablespoon of melted butter. The batter will look thick and a little bubbly. Just before cooking, stir in half a teaspoon of baking soda dissolved in a splash of milk, and watch the batter rise and turn airy.

Heat a frying pan over medium heat and brush it with butter. Pour in small ladles of batter and cook until bubbles appear on the surface and the edges look dry, then flip them and cook for another minute. Keep the finished pancakes warm in a low oven while you cook the rest.

Serve them with berries and yogurt, or with maple syrup if it is that kind of morning. The batter does not keep well after the soda goes in, so only add it when the pan is hot.""",
     ("Made these this morning with rye starter, delicious.",)),

    ("bike-lanes-approved", "en", "riverside-news.example", "article",
     "Council approves protected bike lanes on Station Road",
     """After two years of consultation, the city council voted on Tuesday night to build protected bike lanes along the full length of Station Road. The decision passed by eleven votes to seven after a long and sometimes heated debate.

The plan removes forty parking spaces and narrows the road to one lane in each direction, with low concrete kerbs separating cyclists from traffic. Two new pedestrian crossings will be added near the primary school, and bus stops will be moved onto small islands so that cyclists pass behind them.

Supporters argued that the road has seen nine serious crashes involving cyclists in five years. Several shop owners spoke against the scheme, worried that customers would stop visiting if they could not park outside. The council promised to convert a nearby car park to short stay parking to soften the impact.

Construction is expected to begin in the spring and to take about four months. Residents can see the final drawings at the town hall or on the council website.""",
     ("Long overdue. I gave up cycling to work after a near miss on that road.",
      "Forty spaces is a lot. Where will delivery vans stop?")),

    ("village-school-history", "en", "heritage-trail.example", "table",
     "A short history of Elmbury village school",
     """Elmbury's school opened in 1853 in a single room next to the church, with one teacher and forty-two pupils between the ages of five and twelve. The children paid a penny a week, and the register notes that many were absent during the harvest and the potato picking.

A second classroom was added in 1896, together with a house for the head teacher. Old log books record heating problems almost every winter, a measles outbreak that closed the school for three weeks, and the excitement when the first school photograph was taken in 1904.

During the Second World War the school took in thirty evacuees from London, doubling its numbers almost overnight. Lessons were held in shifts, and the village hall served as an extra classroom for two years.

The old building closed in 1978 when a new school was built on the edge of the village. It is now a community centre, but the bell still hangs above the porch, and it is rung every year on the first day of the autumn term.""",
     ()),

    ("mountain-railway-diary", "en", "slowtravels.example", "main",
     "By train through the mountains: a day on the valley line",
     """The valley line is not the fastest way across the mountains, but it is certainly the most beautiful. The train leaves the lakeside town just after eight and climbs for nearly four hours through forests, tunnels and high meadows before it descends to the plains on the other side.

I took a window seat on the left, as the conductor advised, and spent the first hour watching the lake shrink behind us. Above the tree line the landscape changed completely. Snow still lay in the shaded gullies in June, and cows with heavy bells grazed right next to the tracks.

At the summit station the train stops for ten minutes. Most passengers get out to stretch their legs and take photographs of the glacier, which has retreated a long way since the black and white pictures hanging in the waiting room were taken.

The descent is slower and full of tight curves and spiral tunnels, where you see the same church three times from different heights. I arrived in the evening tired, happy and with a camera full of pictures.""",
     ()),

    ("sharpening-knives", "en", "fixitdaily.example", "divs",
     "How to sharpen a kitchen knife on a whetstone",
     """A sharp knife is safer than a blunt one, because it cuts where you aim it instead of slipping. A simple combination whetstone with a coarse and a fine side is all you need to keep your kitchen knives in good shape.

Soak the stone in water for about ten minutes if it is a water stone, then set it on a damp cloth so it does not slide. Start with the coarse side facing up. Hold the knife at an angle of roughly fifteen to twenty degrees, which is about the height of two stacked coins under the spine.

Push the blade across the stone from heel to tip, as if you were trying to slice a thin layer off the surface. Repeat about ten times, then turn the knife over and do the same on the other side. When you can feel a slight burr along the whole edge, switch to the fine side and repeat with lighter pressure.

Finish with a few alternating strokes on each side to remove the burr, then rinse and dry the knife. Test it on a sheet of paper or a ripe tomato. Sharpening every few weeks is enough for most home cooks.""",
     ()),

    ("adult-piano", "en", "latebloomer.example", "main",
     "What I learned from starting piano lessons at forty-five",
     """I always wanted to play the piano, and for thirty years I always had a good reason not to start. Last autumn I finally bought a second-hand keyboard and booked a lesson with a teacher who lives three streets away.

The first surprise was how slow progress felt. Children seem to absorb new pieces overnight, while I needed weeks to play a simple minuet without stopping. My teacher told me that adults often understand music faster but train their fingers more slowly, and that the only cure is short, regular practice.

So I practise for twenty minutes every morning before work, even on days when I do not feel like it. Some days nothing improves at all. Then suddenly a passage that seemed impossible simply works, and it feels like magic.

After one year I can play a handful of easy pieces, accompany my daughter when she sings, and read music far better than I expected. I am not a pianist, but I am no longer someone who only wishes they could play.""",
     ("Same experience with the violin at fifty. Keep going!",
      "Which method book did your teacher use?")),

    ("novel-review", "en", "bookshelf-review.example", "article",
     "Book review: The Lighthouse Keeper's Ledger",
     """The Lighthouse Keeper's Ledger is a quiet novel about a woman who inherits her great-aunt's account books and slowly discovers a life hidden in the margins. It is not a thriller, and readers expecting a dramatic secret may be disappointed, but those with patience will find it deeply rewarding.

The author moves between two timelines. In the present, Clara sorts through boxes in a damp cottage and argues with her brother about selling it. In the past, her great-aunt records the price of lamp oil, the arrival of supply boats and, between the numbers, small notes about storms, visitors and a friendship that the village would not have accepted.

The writing is precise and unshowy. Some of the best passages are only a few lines long, such as an entry that lists the cost of a new coat and then simply adds that the coat was not for her. The historical details feel carefully researched without ever turning into a lecture.

The ending is gentle and perhaps a little too neat. Even so, this is a thoughtful book about work, memory and the lives that official records leave out, and I finished it in two evenings.""",
     ()),

    ("market-moves", "en", "ashford-gazette.example", "table",
     "Saturday market to move to the cathedral square",
     """Ashford's Saturday market will move from the car park on Bridge Street to the cathedral square from the first weekend of next month. The change follows a survey in which most traders and shoppers said they preferred a more central location.

The square will host up to thirty stalls, selling fruit and vegetables, cheese, bread, flowers and secondhand books. Electricity points have been installed for the food vans, and the council has agreed to close the square to traffic between seven in the morning and four in the afternoon.

Some traders are worried about the smaller space and the lack of loading bays. The market manager said that deliveries would be allowed before eight o'clock and that the layout would be reviewed after three months.

The car park on Bridge Street will return to normal parking use, which shop owners on the street have welcomed.""",
     ("Finally! The car park was always so windy.",)),

    ("winter-bike", "en", "trailnotes.example", "divs",
     "Getting your bicycle ready for winter",
     """Cold, wet roads are hard on a bicycle. Salt and grit eat into the chain, brakes wear quickly and lights become essential by late afternoon. An hour of preparation in autumn will save you money and keep you safe until spring.

Start with the tyres. Wider tyres with a little more tread give better grip on wet leaves, and running them at slightly lower pressure helps as well. Check for cuts and replace any tyre that shows the casing through the rubber.

Fit full mudguards if your frame allows it. They keep you and your bike much cleaner and protect the riders behind you from a spray of dirty water. Clean and lubricate the chain every week or two with a wet lubricant that resists rain.

Finally, check your lights and carry a spare set of batteries or a charger at work. A bright rear light that flashes during the day makes you much easier to see in gloomy weather.""",
     ()),

    ("new-cat-home", "en", "petcorner.example", "main",
     "Helping a rescue cat settle into a new home",
     """Bringing home a rescue cat is exciting for you and frightening for the cat. Everything smells unfamiliar, the noises are new, and there is nowhere yet that feels safe. A little planning makes those first weeks much easier for everyone.

Prepare one quiet room before the cat arrives, with food, water, a litter tray and a hiding place such as a cardboard box on its side. Keep the door closed for the first few days and let the cat explore that room at its own pace. Sit quietly with it, talk softly and let it come to you.

Once the cat eats normally and uses the tray, open the door and let it explore the rest of the home. Keep other pets away at first, and introduce them slowly through a gate or a door open just a crack. Swapping blankets between animals helps them get used to each other's smell.

Most cats settle within two to six weeks, but shy ones may take longer. Patience is the most important thing you can offer, and the reward is a relaxed companion who chooses to sit next to you.""",
     ("Our shy tabby took three months, but now she sleeps on my feet every night.",)),

    ("how-tides-work", "en", "curious-minds.example", "article",
     "Why are there two high tides a day?",
     """Anyone who has spent a day at the seaside has watched the water creep up the beach and slowly retreat again. Most coasts see two high tides and two low tides roughly every twenty-four hours and fifty minutes, and the reason lies in the gravity of the Moon.

The Moon pulls on the whole Earth, but it pulls a little harder on the side facing it and a little less on the far side. The difference stretches the oceans into two bulges, one pointing towards the Moon and one pointing away. As the Earth turns, each coastline passes through both bulges, which gives two high tides a day.

The extra fifty minutes come from the Moon's own movement. While the Earth spins once, the Moon moves a little further along its orbit, so the Earth needs to turn a bit more before the same place faces it again.

The Sun has a similar but weaker effect. When Sun and Moon line up at new and full moon, their pulls add together and produce large spring tides. When they are at right angles, the tides are smaller. The shape of the coast and the depth of the sea then make every harbour's tides a little different.""",
     ()),

    ("apfelkuchen", "de", "omas-kueche.example", "main",
     "Versunkener Apfelkuchen wie bei Oma",
     """Dieser Apfelkuchen gehört zu den Rezepten, die in unserer Familie seit Jahrzehnten gebacken werden. Er ist schnell gemacht, braucht keine besonderen Zutaten und schmeckt am besten noch leicht warm mit etwas Sahne.

Für den Teig schlägt man zweihundert Gramm weiche Butter mit hundertfünfzig Gramm Zucker und einem Päckchen Vanillezucker schaumig. Nach und nach kommen drei Eier dazu. Dann werden zweihundert Gramm Mehl mit zwei Teelöffeln Backpulver vermischt und kurz unter die Masse gerührt.

Vier mittelgroße Äpfel werden geschält, geviertelt und vom Kerngehäuse befreit. Die Viertel ritzt man auf der runden Seite mehrmals längs ein, damit sie beim Backen weich werden. Der Teig kommt in eine gefettete Springform, und die Äpfel werden dicht nebeneinander hineingedrückt.

Der Kuchen backt bei hundertachtzig Grad etwa fünfundvierzig Minuten. Nach dem Abkühlen bestäubt man ihn mit Puderzucker. Wer mag, gibt vor dem Backen noch etwas Zimt über die Äpfel.""",
     ("Habe ihn gestern gebacken, die ganze Familie war begeistert.",)),

    ("stadtbibliothek", "de", "lindenau-anzeiger.example", "article",
     "Stadtbibliothek verlängert ihre Öffnungszeiten",
     """Die Stadtbibliothek Lindenau hat ab dem kommenden Monat auch samstags bis achtzehn Uhr geöffnet. Damit reagiert die Verwaltung auf eine Umfrage, in der sich viele Berufstätige längere Öffnungszeiten am Wochenende gewünscht hatten.

Möglich wird die Änderung durch zwei neue Teilzeitstellen, die der Stadtrat im Frühjahr bewilligt hat. Außerdem wurde ein Rückgabeautomat am Eingang installiert, an dem Bücher rund um die Uhr abgegeben werden können.

Die Leiterin der Bibliothek, Sabine Krüger, freut sich über die Entscheidung. Sie betont, dass die Bibliothek längst nicht mehr nur ein Ort zum Ausleihen von Büchern sei. Schülerinnen und Schüler nutzen die Lernplätze, ältere Menschen besuchen die Computerkurse, und am Donnerstag trifft sich eine Gruppe zum gemeinsamen Stricken.

Der Jahresbeitrag bleibt unverändert bei zwölf Euro. Kinder und Jugendliche bis achtzehn Jahre können die Bibliothek weiterhin kostenlos nutzen.""",
     ()),

    ("wanderung-hoehenweg", "de", "wanderfreunde.example", "divs",
     "Auf dem Höhenweg von Tannbach nach Steinfeld",
     """Der Höhenweg zwischen Tannbach und Steinfeld gehört zu den schönsten Tagestouren der Region. Die Strecke ist etwa achtzehn Kilometer lang, gut markiert und auch für weniger geübte Wanderer machbar, wenn man früh aufbricht.

Vom Bahnhof in Tannbach geht es zunächst steil durch einen Buchenwald bergauf. Nach einer guten Stunde erreicht man die Hochfläche, und plötzlich öffnet sich der Blick über das ganze Tal. Bei klarem Wetter sieht man im Süden sogar die Alpen.

Mittags lohnt sich eine Pause in der Hütte am Kreuzstein, wo es Suppe, Kuchen und frische Buttermilch gibt. Danach führt der Weg über Wiesen und an alten Grenzsteinen entlang, bevor er langsam nach Steinfeld hinabsteigt.

Von Steinfeld fährt stündlich ein Bus zurück nach Tannbach. Feste Schuhe und ausreichend Wasser sollte man unbedingt mitnehmen, denn unterwegs gibt es außer der Hütte keine Einkehrmöglichkeit.""",
     ("Sind wir letzten Sommer gelaufen, wirklich traumhaft!",)),

    ("ratatouille", "fr", "cuisine-du-marche.example", "main",
     "La ratatouille de fin d'été",
     """À la fin de l'été, quand les marchés débordent de légumes, la ratatouille s'impose presque d'elle-même. Chaque famille a sa version, et celle-ci est la nôtre : les légumes sont cuits séparément pour garder leur goût et leur texture.

Coupez en dés deux aubergines, trois courgettes, deux poivrons et deux oignons. Faites revenir chaque légume à part dans un peu d'huile d'olive, avec une pincée de sel, jusqu'à ce qu'il soit tendre et légèrement doré. Cela demande un peu de patience, mais le résultat en vaut la peine.

Dans une grande cocotte, faites fondre quatre tomates concassées avec deux gousses d'ail, du thym et une feuille de laurier. Ajoutez ensuite tous les légumes, mélangez délicatement et laissez mijoter à feu doux pendant une demi-heure.

La ratatouille se mange chaude, tiède ou froide. Elle est encore meilleure le lendemain, servie avec du pain de campagne ou un œuf au plat.""",
     ("Merci pour la recette, je n'avais jamais pensé à cuire les légumes séparément.",)),

    ("marche-couvert", "fr", "journal-de-valbourg.example", "article",
     "Le marché couvert de Valbourg rouvre ses portes",
     """Après un an de travaux, le marché couvert de Valbourg a rouvert samedi matin sous les applaudissements de nombreux habitants. La charpente métallique du dix-neuvième siècle a été entièrement restaurée, et la verrière laisse de nouveau entrer la lumière.

Une vingtaine de commerçants ont retrouvé leur place, parmi lesquels un fromager, deux maraîchers, un boucher et une boulangère installée depuis trente ans. Trois nouveaux stands ont également ouvert, dont un torréfacteur de café et une petite librairie.

Le maire a rappelé que le bâtiment avait failli être démoli dans les années soixante-dix. Il a remercié l'association de quartier qui s'était battue pour le sauver, et annoncé que des concerts seraient organisés sous la halle pendant l'été.

Le marché est ouvert du mardi au dimanche, de huit heures à treize heures. Le parking voisin reste gratuit pendant la matinée.""",
     ()),

    ("voyage-bretagne", "fr", "carnets-de-route.example", "divs",
     "Carnet de voyage : une semaine sur la côte bretonne",
     """Nous avons passé une semaine dans un petit village de pêcheurs, au bout d'une route qui semble ne mener nulle part. La maison que nous avions louée donnait directement sur le port, et chaque matin commençait par le bruit des bateaux qui partaient en mer.

Le temps changeait sans cesse. En une seule journée, nous avons connu le soleil, la bruine, un vent à décoiffer les mouettes et un coucher de soleil magnifique. Les habitants en rient et disent qu'en Bretagne, il fait beau plusieurs fois par jour.

Nous avons marché des heures sur le sentier des douaniers, qui longe la côte entre les rochers de granit rose et les petites criques. À marée basse, les enfants cherchaient des crabes pendant que nous ramassions des coquillages.

Le dernier soir, nous avons mangé des crêpes dans une petite crêperie tenue par un couple de retraités. Nous reviendrons, c'est certain.""",
     ()),

    ("tortilla-espanola", "es", "cocina-casera.example", "main",
     "Tortilla de patatas jugosa, paso a paso",
     """La tortilla de patatas es uno de los platos más sencillos y a la vez más discutidos de la cocina española. Con cebolla o sin cebolla, cuajada o jugosa, cada casa tiene su costumbre. Esta es la versión que preparamos en casa los domingos.

Pela y corta en láminas finas medio kilo de patatas y una cebolla mediana. Ponlas a fuego medio en una sartén con abundante aceite de oliva y una pizca de sal, y deja que se cocinen despacio durante unos veinte minutos, sin que lleguen a dorarse.

Mientras tanto, bate seis huevos en un cuenco grande. Escurre bien las patatas y la cebolla, mézclalas con el huevo y deja reposar la mezcla unos minutos para que se integre.

Calienta una sartén con un poco de aceite, vierte la mezcla y cuaja la tortilla a fuego medio. Cuando los bordes estén firmes, dale la vuelta con ayuda de un plato y cocínala un minuto más por el otro lado. Sírvela templada.""",
     ("¡Con cebolla siempre!", "La hice ayer y quedó perfecta, gracias.")),

    ("parque-ribera", "es", "diario-de-villaverde.example", "article",
     "El parque de la Ribera estrena zona de juegos y huerto escolar",
     """El parque de la Ribera ha reabierto este fin de semana tras tres meses de obras. La reforma incluye una nueva zona de juegos infantiles, fuentes de agua potable y un huerto que cuidarán los alumnos de los dos colegios del barrio.

Los vecinos llevaban años pidiendo mejoras, ya que los columpios antiguos estaban deteriorados y en verano apenas había sombra. Ahora se han plantado cuarenta árboles y se han instalado bancos nuevos junto al paseo del río.

La concejala de Medio Ambiente explicó que el huerto servirá para que los niños aprendan de dónde vienen los alimentos. Las verduras que se cosechen se repartirán entre las familias participantes y el comedor social.

El parque abre todos los días de ocho de la mañana a diez de la noche. El ayuntamiento ha pedido a los vecinos que ayuden a mantenerlo limpio.""",
     ()),

    ("ahorrar-energia", "es", "hogar-practico.example", "divs",
     "Siete trucos sencillos para ahorrar energía en casa",
     """La factura de la luz no deja de subir, pero muchos hogares pueden ahorrar bastante con pequeños cambios de hábitos. Ninguno de estos consejos requiere obras ni grandes inversiones.

Apaga por completo los aparatos en lugar de dejarlos en espera, sobre todo la televisión y el ordenador. Una regleta con interruptor facilita mucho esta tarea. Aprovecha también la luz natural y cambia las bombillas antiguas por otras de bajo consumo.

En la cocina, tapa las ollas al cocinar y usa el calor residual de la vitrocerámica durante los últimos minutos. Pon la lavadora y el lavavajillas solo cuando estén llenos, y elige programas de baja temperatura siempre que sea posible.

Por último, revisa las ventanas. Una simple tira de burlete puede evitar corrientes de aire y reducir mucho el gasto en calefacción durante el invierno.""",
     ()),

    ("sanpo-nikki", "ja", "kurashi-note.example", "main",
     "川沿いの朝の散歩",
     """毎朝、仕事に行く前に川沿いの道を三十分ほど歩くことにしています。始めたのは去年の春で、最初は三日坊主になると思っていましたが、気がつけば一年以上続いています。

朝の川はとても静かです。サギが浅瀬でじっと魚を待ち、ジョギングをする人が軽く会釈をして通り過ぎていきます。季節ごとに景色が変わるので、同じ道でも飽きることがありません。

春には桜並木が満開になり、夏には早朝でも汗ばむほど暑くなります。秋は紅葉がきれいで、冬は吐く息が白くなる中を歩きます。

歩いたあとは頭がすっきりして、仕事にも集中しやすくなりました。特別な道具は何もいりません。皆さんも、近くの道から始めてみてはいかがでしょうか。""",
     ("素敵な習慣ですね。私も明日から歩いてみます。",)),

    ("istoriya-mosta", "ru", "gorodskie-novosti.example", "article",
     "История старого каменного моста",
     """Старый каменный мост через реку Светлую построили в середине девятнадцатого века. До этого жители города переправлялись на пароме, который весной часто не работал из-за половодья.

Строительство заняло почти шесть лет. Камень возили из карьера в соседней деревне, а работали на стройке в основном местные крестьяне. По легенде, в основание моста замуровали монету, чтобы он простоял как можно дольше.

В двадцатом веке мост несколько раз ремонтировали, а в семидесятые годы рядом построили новый бетонный мост для машин. Старый мост стал пешеходным, и сегодня это одно из самых любимых мест горожан.

Летом здесь гуляют семьи с детьми, а по вечерам собираются фотографы, чтобы снять закат над рекой.""",
     ()),

    ("risotto-zucca", "it", "cucina-di-casa.example", "main",
     "Risotto alla zucca, cremoso e semplice",
     """Il risotto alla zucca è uno dei piatti più amati dell'autunno. Bastano pochi ingredienti di qualità e un po' di pazienza davanti ai fornelli per ottenere un risultato cremoso e profumato.

Taglia a cubetti circa quattrocento grammi di zucca e falla cuocere in una pentola con un filo d'olio e mezza cipolla tritata, finché diventa morbida. Schiacciala in parte con una forchetta e tienila da parte.

Nella stessa pentola tosta trecento grammi di riso per un paio di minuti, poi sfuma con un bicchiere di vino bianco. Aggiungi il brodo caldo un mestolo alla volta, mescolando spesso, e unisci la zucca a metà cottura.

Quando il riso è al dente, spegni il fuoco e manteca con una noce di burro e abbondante parmigiano. Lascia riposare un minuto prima di servire.""",
     ()),
]
